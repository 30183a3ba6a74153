import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { History, runStream } from '../pass/history.js';
import { RUN_QUEUE } from '../runtime.js';
import { workflow } from '../workflow.js';

const echo = workflow(
  'flow-echo',
  { priority: 5, concurrency: [{ key: 'input.user', limit: 3 }] },
  async (ctx, input: { user: string }) => ctx.step('echo', async () => input.user),
);

describe.each(backends)('a start with flow options on $name', (backend) => {
  it('records the merged, checked flow in run.started (the start wins, keys resolved) for History to read', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [echo] });
    try {
      const run = await engine.start(echo, { user: 'u1' }, { id: 'flow-1', priority: -3 });
      expect(await run.result()).toBe('u1');
      const events = await engine.journal.readStream(runStream('flow-1'));
      expect(events[0]!.type).toBe(RUN_EVENT.runStarted);
      const history = new History(events);
      expect(history.flow).toEqual({
        priority: -3,
        concurrency: [{ key: 'input.user', limit: 3, slot: 'flow-echo:u1' }],
      });
      expect((await engine.run('flow-1')).priority).toBe(-3);
      await expect(engine.start(echo, { user: 'u1' }, { priority: 101 })).rejects.toThrow(/^priority: must be/);
      await expect(engine.start(echo, {} as { user: string })).rejects.toThrow(/^concurrency\[0\]\.key: /);
    } finally {
      await close();
    }
  });

  it('queues the first pass of a run with notBefore at that time, its priority on it, the run waiting', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [echo] });
    try {
      const at = (await engine.store.now()) + 60_000;
      await engine.start(echo, { user: 'u2' }, { id: 'later-1', notBefore: at });
      const view = await engine.run('later-1');
      expect(view.status).toBe('waiting');
      expect(view.waitingFor).toBe(`not before ${new Date(at).toISOString()}`);
      const [pass] = (await engine.queue.list({ queue: RUN_QUEUE })).filter((t) => t.orderingKey === 'later-1');
      expect(pass).toMatchObject({ state: 'ready', runAt: at, priority: 5 });
      await expect(engine.start(echo, { user: 'u2' }, { notBefore: Number.NaN })).rejects.toThrow(/^notBefore: /);
      // due now: it runs, and waits no more
      const now = await engine.start(echo, { user: 'u3' }, { id: 'later-2', notBefore: await engine.store.now() });
      expect(await now.result()).toBe('u3');
      expect((await engine.run('later-2')).waitingFor ?? null).toBeNull();
    } finally {
      await close();
    }
  });
});
