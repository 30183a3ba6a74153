import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { workflow } from '../workflow.js';

// a step that runs until its pass stops: only a cancellation the pass notices ends it
const patient = workflow('patient', async (ctx) => {
  await ctx.step(
    'wait',
    () => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('stopped'))),
  );
  return 'done';
});

describe.each(backends)('cancel watch on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it('notices a cancellation that commits while the pass reads its history, without waiting for the poll', async () => {
    // the poll would find it after a minute: only the wake-up can end the run within the test
    const made = await testEngine(backend, { workflows: [patient], pollMs: 60_000 });
    close = made.close;
    const engine = made.engine;
    const store = engine.store;
    const read = store.eventReadStream.bind(store);
    let cancelled = false;
    // the pass's history read: the cancellation commits after the read, and its wake-up goes out
    // before the read returns, so a watch that started listening only after the read would miss it
    store.eventReadStream = async (p) => {
      const events = await read(p);
      if (!cancelled && p.streamId === 'run:r-1' && !p.backwards && p.limit === 1_000_000) {
        cancelled = true;
        await engine.cancel('r-1');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return events;
    };
    // started while its workflow is paused, then resumed: a worker claims the pass, which reads its history (one its
    // start claimed here would read nothing)
    const ops = { by: 'test', reason: 'a pass that reads its history' };
    await engine.operator.pause('workflow', 'patient', ops);
    await engine.start(patient, null, { id: 'r-1' });
    await engine.operator.resume('workflow', 'patient', ops);
    await eventually(async () => (await engine.run('r-1')).status === 'cancelled', 15_000);
    expect(cancelled).toBe(true);
  });
});
