import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { StoreClock } from './clock.js';

import { RUN_QUEUE } from '../runtime.js';
import { workflow } from '../workflow.js';

/** The wall clock, whatever the test does to Date.now. */
const wall = Date.now.bind(Date);
const SLEEP_MS = 1500;
const RETRY_MS = 1000;
const MINUTES_10 = 10 * 60_000;

/**
 * A step, a failing step retried after 1 s, a 1.5 s durable sleep, a step; each records the wall
 * time it ran at. The run has a timeout of a minute: on a clock 10 minutes ahead it must not expire.
 */
const timers = (times: Record<string, number>) =>
  workflow('timers', async (ctx) => {
    await ctx.step('before', async () => void (times.before = wall()));
    await ctx.step(
      'flaky',
      async ({ attempt }) => {
        times[`flaky${attempt}`] = wall();
        if (attempt === 1) throw new Error('fails once');
      },
      { retry: { maxAttempts: 2, backoff: { base: RETRY_MS, factor: 1, max: RETRY_MS } } },
    );
    await ctx.sleep('nap', SLEEP_MS);
    await ctx.step('after', async () => void (times.after = wall()));
    return 'woke';
  });

describe.each(backends)('timers of a process whose clock is off, on $name', (backend) => {
  let engine: Engine | null = null;
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    vi.restoreAllMocks();
    engine = close = null;
  });

  // In process, Date.now is this process's clock. On PostgreSQL the database keeps its own, so the
  // two disagree by `skew`, as they do for a worker on a machine whose clock is off: without the
  // database clock the timers of the run fire late (10 minutes, the test times out), or the run
  // times out at once (ahead), or a sleep's pass is claimed again and again until the process's
  // clock reaches its end (behind). On SQLite the database's clock is the clock of the process
  // that writes it, so the same assertions check that nothing breaks when they agree.
  it.each([
    ['ahead', MINUTES_10],
    ['behind', -MINUTES_10],
  ])(
    'fires a sleep and a retry neither early nor late, with the clock 10 minutes %s',
    async (_label, skew) => {
      vi.spyOn(Date, 'now').mockImplementation(() => wall() + skew);
      const times: Record<string, number> = {};
      const wf = timers(times);
      ({ engine, close } = await testEngine(backend, { workflows: [wf], pollMs: 100 }));
      const run = await engine.start(wf, {}, { id: 'skewed', timeout: '60s' });
      const outcome = await Promise.race([
        run.result(),
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), 15_000)),
      ]);
      expect(outcome).toBe('woke');
      expect(times.flaky2! - times.flaky1!).toBeGreaterThanOrEqual(RETRY_MS * 0.8);
      expect(times.after! - times.flaky2!).toBeGreaterThanOrEqual(SLEEP_MS);
      // late is bounded by the machine's load, not by the skew
      expect(times.after! - times.before!).toBeLessThan(RETRY_MS + SLEEP_MS + 5000);
      // a pass to start, one after the retry's wait, one after the sleep: not one per poll until the process's clock catches up
      expect((await engine.queue.list({ queue: RUN_QUEUE })).length).toBeLessThanOrEqual(4);
    },
    30_000,
  );

  it('learns the database clock once, and again only after a few seconds', async () => {
    ({ engine, close } = await testEngine(backend));
    let reads = 0;
    const store = engine.store;
    const clock = new StoreClock({ now: () => (reads++, store.now()) }, 1000);
    await clock.ready();
    await clock.ready();
    const first = clock.now();
    expect(Math.abs(first - (await store.now()))).toBeLessThan(1000);
    expect(reads).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    clock.now();
    await clock.ready();
    expect(reads).toBe(2);
  });
});
