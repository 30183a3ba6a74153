import { describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import { workflow } from '../workflow.js';

const PER_SECOND = 2;
const throttled = workflow(
  'throttled',
  { throttle: { key: 'input.user', limit: PER_SECOND, period: '1s' } },
  async (ctx, input: { user: string; n: number }) => ctx.step('work', async () => input.n),
);

const slow = workflow(
  'throttled-slow',
  { throttle: { key: 'input.user', limit: 1, period: '30s' } },
  async (_ctx, input: { user: string; n: number }) => input.n,
);

describe.each(backends)('throttled starts on $name', (backend) => {
  // each test on its own database, side by side: most of their time is waiting for slots
  const test = (name: string, body: (engine: Engine) => Promise<void>) =>
    it.concurrent(name, async () => {
      const { engine, close } = await testEngine(backend, { workflows: [throttled, slow], pollMs: 100 });
      try {
        await body(engine);
      } finally {
        await close();
      }
    });

  test(`runs all of 6 starts of a key at ${PER_SECOND} per second, each first pass at its slot; another key is not held back`, async (engine) => {
    const runs = await Promise.all(Array.from({ length: 6 }, (_, n) => engine.start(throttled, { user: 'u1', n })));
    const other = await engine.start(throttled, { user: 'u2', n: 100 });
    expect(new Set(runs.map((r) => r.id)).size).toBe(6);
    const outputs = await Promise.all(runs.map((r) => r.result({ pollMs: 100 })));
    expect([...outputs].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await other.result({ pollMs: 100 })).toBe(100);

    const seen = await Promise.all(
      runs.map(async (run) => {
        const events = await engine.journal.readStream(runStream(run.id));
        const throttledBy = events.find((e) => e.type === RUN_EVENT.runThrottled)?.data as
          | { until: number; waitingFor?: string }
          | undefined;
        return { throttledBy, stepAt: events.find((e) => e.type === RUN_EVENT.stepStarted)!.timestamp };
      }),
    );
    // each start's slot, 1 s / 2 after the last: no second holds more than 2 starts
    const slots = seen.map((s) => s.throttledBy!.until).sort((a, b) => a - b);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(1000 / PER_SECOND);
    for (let i = 2; i < slots.length; i++) expect(slots[i]! - slots[i - 2]!).toBeGreaterThanOrEqual(1000);
    // those that found their slot later than their start waited for it; the first found it free
    const delayed = seen.filter((s) => s.throttledBy?.waitingFor !== undefined);
    expect(delayed.length).toBeGreaterThanOrEqual(1);
    expect(delayed.length).toBeLessThanOrEqual(5);
    // no first pass began before its slot (journal times, the database's clock)
    for (const s of seen) expect(s.stepAt).toBeGreaterThanOrEqual(s.throttledBy!.until);
    for (const s of delayed)
      expect(s.throttledBy!.waitingFor).toBe(`throttled until ${new Date(s.throttledBy!.until).toISOString()}`);
    // the other key's start was not delayed
    const otherEvents = await engine.journal.readStream(runStream(other.id));
    const otherSlot = otherEvents.find((e) => e.type === RUN_EVENT.runThrottled)?.data as { waitingFor?: string };
    expect(otherSlot.waitingFor).toBeUndefined();
  });

  test('takes no slot for a start whose id exists, and refuses an input without the key', async (engine) => {
    const first = await engine.start(slow, { user: 'u1', n: 1 }, { id: 'once' });
    const again = await engine.start(slow, { user: 'u1', n: 2 }, { id: 'once' });
    expect(again.id).toBe(first.id);
    const next = await engine.start(slow, { user: 'u1', n: 3 });
    const events = await engine.journal.readStream(runStream(next.id));
    const until = (events.find((e) => e.type === RUN_EVENT.runThrottled)?.data as { until: number } | undefined)?.until;
    // the key's second slot (30 s after the first), not its third: the repeated start's slot went with its rollback
    expect((until ?? Number.NaN) - events[0]!.timestamp).toBeLessThanOrEqual(30_000);
    expect(await engine.run(next.id)).toMatchObject({
      status: 'waiting',
      waitingFor: `throttled until ${new Date(until ?? 0).toISOString()}`,
    });
    await expect(engine.start(throttled, { n: 1 } as never)).rejects.toThrow(/throttle\.key/);
    expect(await first.result({ pollMs: 100 })).toBe(1);
  });
});
