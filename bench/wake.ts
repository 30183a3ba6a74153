import { createEngine } from '../dist/engine.js';
import { runStream } from '../dist/runtime/pass/history.js';
import { workflow } from '../dist/runtime/workflow.js';

export interface WakeSizes {
  /** Events in the run's history before the wake-ups. */
  events: number;
  /** Wake-ups measured (the median is reported), after one unmeasured. */
  wakes: number;
}

/** Replays `n` journaled values, then answers each `tick` signal with a step. */
const long = workflow('bench-long', { version: '1' }, async (ctx, input: { n: number }) => {
  for (let i = 0; i < input.n; i++) await ctx.now();
  for (let k = 0; ; k++) {
    await ctx.waitForEvent('tick');
    await ctx.step(`after-${k}`, async () => k);
  }
});

/**
 * `wake_10k_history_ms`: from a signal to the start of the step it lets run, for a run whose
 * history holds `events` events; with the replay cache (the default) or without (`replayCacheRuns: 0`).
 * The history is written in one append, as `ctx.now()` values, so the setup costs seconds, not minutes.
 */
export async function benchWake(database: string, sizes: WakeSizes, cache: boolean): Promise<number> {
  const setup = await createEngine({ database, workflows: [long], workers: false });
  const n = sizes.events;
  try {
    await setup.start(long, { n }, { id: 'long-1' });
    const values = Array.from({ length: n }, (_, i) => ({
      type: 'value.recorded',
      data: { seq: i + 1, name: 'now', value: i },
    }));
    for (let at = 0; at < n; at += 50_000)
      await setup.journal.append(runStream('long-1'), values.slice(at, at + 50_000));
  } finally {
    await setup.close();
  }
  const engine = await createEngine({
    database,
    workflows: [long],
    pollMs: 20,
    ...(cache ? {} : { replayCacheRuns: 0 }),
  });
  try {
    const stepStarted = async (k: number, after: number) => {
      for (;;) {
        const events = await engine.journal.readStream(runStream('long-1'), { fromVersion: after + 1 });
        if (events.some((e) => e.type === 'step.started' && (e.data as { name: string }).name === `after-${k}`)) return;
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    const waiting = async () => {
      while ((await engine.run('long-1')).status !== 'waiting') await new Promise((resolve) => setTimeout(resolve, 5));
    };
    const times: number[] = [];
    for (let k = 0; k <= sizes.wakes; k++) {
      await waiting();
      // the pass that suspended has let go of the run: the next pass is the signal's
      await new Promise((resolve) => setTimeout(resolve, 20));
      const [last] = await engine.journal.readStream(runStream('long-1'), { limit: 1, backwards: true });
      const started = performance.now();
      await engine.signal('long-1', 'tick', k);
      await stepStarted(k, last!.version);
      if (k > 0) times.push(performance.now() - started);
    }
    times.sort((a, b) => a - b);
    return times[Math.floor(times.length / 2)]!;
  } finally {
    await engine.close();
  }
}
