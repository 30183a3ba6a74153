import { describe, expect, it } from 'vitest';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { createMetrics } from './metrics.js';

const held = workflow('metrics-held', async (ctx, input: { user: string }) => {
  await ctx.step('begin', async () => input.user);
  return ctx.waitForEvent<string>('go');
});

describe.each(backends)('concurrency gauges on $name', (backend) => {
  it('counts the runs holding a slot and those waiting, over every key, on each scrape', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [held], pollMs: 50 });
    const metrics = createMetrics(engine.events, engine.operator, {
      processMetrics: false,
      concurrency: () => engine.runs.concurrency({ max: 10_000 }),
    });
    try {
      const limit = { concurrency: [{ key: 'input.user', limit: 1 }] };
      for (const [id, user] of [
        ['m-1', 'ada'],
        ['m-2', 'ada'],
        ['m-3', 'ada'],
        ['m-4', 'bob'],
      ] as const)
        await engine.start(held, { user }, { id, ...limit });
      const text = await metrics.text();
      expect(text).toContain('runledger_concurrency_runs{state="in_use"} 2');
      expect(text).toContain('runledger_concurrency_runs{state="waiting"} 2');
      expect(text).toContain('runledger_concurrency_keys_with_waiting 1');
      // no key is a label: a key is a user's value
      expect(text).not.toMatch(/ada|bob/);
    } finally {
      metrics.close();
      await close();
    }
  });
});
