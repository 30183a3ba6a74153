import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { decideBudget } from '../runtime/pass/budget-decision.js';
import { workflow } from '../runtime/workflow.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { createMetrics } from './metrics.js';

/* The flow-control counters of /metrics, moved by a real engine: rate-limit waits, debounced starts, budget decisions. */

const limited = workflow('metrics-rated', async (ctx) => {
  await ctx.step('first', async () => 1, { rateLimit: { name: 'metrics-api' } });
  return ctx.step('second', async () => 2, { rateLimit: { name: 'metrics-api' } });
});
const chat = workflow(
  'metrics-chat',
  { debounce: { key: 'input.chat', period: '1h' } },
  async (_ctx, input: { chat: string }) => input.chat,
);
const metered = workflow('metrics-budget', { budget: { steps: 1, onExceed: 'approve' } }, async (ctx) => {
  await ctx.step('one', async () => 1);
  return ctx.step('two', async () => 2);
});

describe.each(backends)('flow-control counters in GET /metrics on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('counts a step told to wait for a limit, by its name; starts that joined a window; budget decisions', async () => {
    const made = await testEngine(backend, { workflows: [limited, chat, metered], pollMs: 50 });
    const { engine } = made;
    const metrics = createMetrics(engine.events, engine.operator, { processMetrics: false });
    close = async () => {
      metrics.close();
      await made.close();
    };
    const app = createApp({ engine, workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }), metrics });
    const scrape = async () => (await app.fetch(new Request('http://api/metrics'))).text();
    const before = await scrape();
    expect(before).not.toMatch(/runledger_rate_limit_waits_total\{/);
    expect(before).toContain('runledger_debounced_starts_total 0');

    // one unit an hour: the second step waits for the limit
    await engine.limits.define({ name: 'metrics-api', limit: 1, period: '1h' });
    const rated = await engine.start(limited, null);
    await eventually(async () => /^rate limit metrics-api/.test((await engine.run(rated.id)).waitingFor ?? ''));

    // three starts of one chat, one of another: two joined the first window
    const first = await engine.start(chat, { chat: 'a' });
    expect((await engine.start(chat, { chat: 'a' })).id).toBe(first.id);
    expect((await engine.start(chat, { chat: 'a' })).id).toBe(first.id);
    expect((await engine.start(chat, { chat: 'b' })).id).not.toBe(first.id);

    // two runs over their steps cap: one approved, one rejected
    const waiting = async (id: string) => eventually(async () => (await engine.run(id)).status === 'waiting');
    const approved = await engine.start(metered, null);
    const rejected = await engine.start(metered, null);
    await waiting(approved.id);
    await waiting(rejected.id);
    await decideBudget(engine.runtime, approved.id, { decision: 'approve', by: 'ana', extend: { steps: 1 } });
    await decideBudget(engine.runtime, rejected.id, { decision: 'reject', by: 'ana' });
    expect(await approved.result()).toBe(2);
    await expect(rejected.result()).rejects.toThrow(/rejected by ana/);

    const text = await scrape();
    expect(text).toContain('runledger_rate_limit_waits_total{limit="metrics-api"} 1');
    expect(text).toContain('runledger_debounced_starts_total 2');
    expect(text).toContain('runledger_budget_decisions_total{decision="exceeded"} 2');
    expect(text).toContain('runledger_budget_decisions_total{decision="approved"} 1');
    expect(text).toContain('runledger_budget_decisions_total{decision="rejected"} 1');
    // a run id or a key is never a label
    for (const id of [rated.id, first.id, approved.id, rejected.id]) expect(text).not.toContain(id);
  });
});
