import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { mount } from './app.js';
import { runSummary } from './records/runs.js';
import { flowRoutes } from './routes/flow.js';

const held = workflow('held-by-a-key', async (ctx, input: { user: string }) => {
  await ctx.step('begin', async () => input.user);
  return ctx.waitForEvent<string>('go');
});

describe.each(backends)('GET /flow on $name', (backend) => {
  it('shows a concurrency key in use with its waiting runs, oldest first, and the named rate limits', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [held], pollMs: 50 });
    try {
      const app = mount(new Hono(), flowRoutes(engine));
      const flow = async () => (await (await app.fetch(new Request('http://api/flow'))).json()) as any;
      expect(await flow()).toEqual({ concurrency: [], truncated: false, rate_limits: [] });

      await engine.limits.define({ name: 'openai', limit: 500, period: '1m', key: 'input.user' });
      const limit = { concurrency: [{ key: 'input.user', limit: 1 }] };
      await engine.start(held, { user: 'ada' }, { id: 'f-1', ...limit });
      await engine.start(held, { user: 'ada' }, { id: 'f-2', ...limit });
      await engine.start(held, { user: 'ada' }, { id: 'f-3', ...limit });
      await engine.start(held, { user: 'bob' }, { id: 'f-4', ...limit });
      const answer = await flow();
      expect(answer.rate_limits).toEqual([{ name: 'openai', limit: 500, period_ms: 60_000, key: 'input.user' }]);
      expect(answer.concurrency).toEqual([
        {
          key: 'held-by-a-key:ada',
          limit: 1,
          in_use: 1,
          waiting: 2,
          active_runs: ['f-1'],
          waiting_runs: ['f-2', 'f-3'],
          oldest_waiting_since: new Date((await engine.run('f-2')).createdAt).toISOString(),
        },
        {
          key: 'held-by-a-key:bob',
          limit: 1,
          in_use: 1,
          waiting: 0,
          active_runs: ['f-4'],
          waiting_runs: [],
          oldest_waiting_since: null,
        },
      ]);
      // the runs list says why the held-back runs wait
      const summary = runSummary((await engine.runs.find('f-2'))!);
      expect(summary).toMatchObject({
        status: 'waiting',
        waiting_for: 'concurrency held-by-a-key:ada — 1 of 1 in use',
      });
      expect(runSummary((await engine.runs.find('f-1'))!).waiting_for).toBeNull();

      // the first ends: the next takes its slot; once every run has ended no key is shown
      await engine.signal('f-1', 'go', 'ok');
      await eventually(async () => (await flow()).concurrency[0]?.active_runs[0] === 'f-2');
      expect((await flow()).concurrency[0]).toMatchObject({ in_use: 1, waiting: 1, waiting_runs: ['f-3'] });
      for (const id of ['f-2', 'f-3', 'f-4']) {
        await eventually(async () => (await flow()).concurrency.some((k: any) => k.active_runs.includes(id)));
        await engine.signal(id, 'go', 'ok');
      }
      await eventually(async () => (await flow()).concurrency.length === 0);
    } finally {
      await close();
    }
  });
});
