import { describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import { workflow } from '../workflow.js';

type In = { k: string; n: number };
const ns = (ctx: { step: <T>(name: string, fn: () => Promise<T>) => Promise<T> }, inputs: In[]) =>
  ctx.step('echo', async () => inputs.map((i) => i.n));

const three = workflow(
  'batch-three',
  { batch: { key: 'input.k', maxSize: 3, timeout: '1h' } },
  async (ctx, inputs: In[]) => ns(ctx, inputs),
);
const quick = workflow('batch-quick', { batch: { maxSize: 100, timeout: '1s' } }, async (ctx, inputs: In[]) =>
  ns(ctx, inputs),
);
const big = workflow('batch-big', { batch: { maxSize: 100, timeout: '1h' } }, async (ctx, inputs: In[]) =>
  ns(ctx, inputs),
);
const signalled = workflow('batch-signalled', { batch: { maxSize: 100, timeout: '3s' } }, async (ctx, inputs: In[]) => {
  const go = await ctx.waitForEvent<{ at: number }>('go', { timeout: '30s' });
  return { ns: inputs.map((i) => i.n), go };
});
const plain = workflow('batch-plain', async (ctx, inputs: In[]) => ns(ctx, inputs));

const numbers = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe.each(backends)('batched starts on $name', (backend) => {
  const test = (name: string, body: (engine: Engine) => Promise<void>, timeoutMs = 30_000) =>
    it.concurrent(
      name,
      async () => {
        const { engine, close } = await testEngine(backend, {
          workflows: [three, quick, big, plain, signalled],
          pollMs: 100,
        });
        try {
          await body(engine);
        } finally {
          await close();
        }
      },
      timeoutMs,
    );
  const events = (engine: Engine, id: string) => engine.journal.readStream(runStream(id));
  const result = (engine: Engine, id: string) => engine.runtime.handle(id).result({ pollMs: 100 });

  test('runs a full batch at once, in start order; the next start opens a new batch; keys apart', async (engine) => {
    const ids: string[] = [];
    for (const n of numbers(1, 4)) ids.push((await engine.start(three, { k: 'a', n })).id);
    const other = await engine.start(three, { k: 'b', n: 9 });
    expect(ids.slice(0, 3).every((id) => id === ids[0])).toBe(true);
    expect(ids[3]).not.toBe(ids[0]);
    expect(other.id).not.toBe(ids[0]);
    expect(other.id).not.toBe(ids[3]);
    // the batch holds three: its run begins at once, not an hour after its first input
    expect(await result(engine, ids[0]!)).toEqual([1, 2, 3]);
    const journal = await events(engine, ids[0]!);
    const batched = journal
      .filter((e) => e.type === RUN_EVENT.runBatched)
      .map((e) => e.data as Record<string, unknown>);
    expect(batched.map((d) => d.size)).toEqual([1, 2, 3]);
    expect(batched[0]!.waitingFor).toMatch(/^batch 1 of 3 — until \d{4}-/);
    expect(batched[2]!.waitingFor).toBeUndefined();
    expect(journal.filter((e) => e.type === RUN_EVENT.stepStarted)).toHaveLength(1);
    // the others wait for their batch to fill, shown with why
    const waiting = await engine.run(ids[3]!);
    expect(waiting.status).toBe('waiting');
    expect(waiting.waitingFor).toMatch(/^batch 1 of 3 — until \d{4}-/);
    expect(waiting.input).toEqual([{ k: 'a', n: 4 }]);
    expect((await engine.run(other.id)).input).toEqual([{ k: 'b', n: 9 }]);
  });

  test('runs a batch with fewer inputs when its timeout passes; a per-start batch on a plain workflow', async (engine) => {
    const a = await engine.start(quick, { k: 'x', n: 1 });
    const b = await engine.start(quick, { k: 'y', n: 2 });
    expect(b.id).toBe(a.id);
    const waiting = await engine.run(a.id);
    expect(waiting.waitingFor).toMatch(/^batch 2 of 100 — until \d{4}-/);
    expect(await result(engine, a.id)).toEqual([1, 2]);
    const after = await engine.start(quick, { k: 'x', n: 3 });
    expect(after.id).not.toBe(a.id);
    expect(await result(engine, after.id)).toEqual([3]);

    const own = { batch: { maxSize: 2, timeout: '1h' } };
    const p = await engine.start(plain, { k: 'p', n: 1 }, own);
    const q = await engine.start(plain, { k: 'p', n: 2 }, own);
    expect(q.id).toBe(p.id);
    expect(await result(engine, p.id)).toEqual([1, 2]);
  });

  test('1,000 concurrent starts of one key with maxSize 100 make 10 runs holding every input once', async (engine) => {
    const ids: string[] = new Array(1_000);
    let next = 0;
    // 25 starts in flight at a time, from one engine's pool
    await Promise.all(
      numbers(0, 25).map(async () => {
        while (next < 1_000) {
          const n = next++;
          ids[n] = (await engine.start(big, { k: 'one', n })).id;
        }
      }),
    );
    const runs = [...new Set(ids)];
    expect(runs).toHaveLength(10);
    const seen: number[] = [];
    for (const run of runs) {
      const got = (await result(engine, run)) as number[];
      expect(got).toHaveLength(100);
      // each start returned the run its input went into
      expect([...got].sort((x, y) => x - y)).toEqual(numbers(0, 1_000).filter((n) => ids[n] === run));
      seen.push(...got);
    }
    expect(seen.sort((x, y) => x - y)).toEqual(numbers(0, 1_000));
  }, 120_000);

  test('a signal sent while its batch is open is kept: the run begins once the batch closed, with every input', async (engine) => {
    const first = await engine.start(signalled, { k: 'a', n: 1 });
    await engine.signal(first.id, 'go', { at: 1 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // the signal did not begin the run: this start joins the batch it is still in
    const second = await engine.start(signalled, { k: 'a', n: 2 });
    expect(second.id).toBe(first.id);
    expect((await engine.run(first.id)).status).toBe('waiting');
    expect(await result(engine, first.id)).toEqual({ ns: [1, 2], go: { at: 1 } });
    const journal = await events(engine, first.id);
    const began = journal.find((e) => e.type === RUN_EVENT.waitStarted || e.type === RUN_EVENT.waitCompleted);
    const opened = journal.find((e) => e.type === RUN_EVENT.runBatched)!;
    // the batch closed at its timeout (its `until`): nothing of the run's code ran before that
    expect(began!.timestamp).toBeGreaterThanOrEqual((opened.data as { until: number }).until);
  });

  test('refuses bad batches naming the field, a run id, a key the input lacks, and batch with debounce', async (engine) => {
    const start = (batch: unknown, input: unknown = { k: 'a', n: 1 }) =>
      engine.start(plain, input as never, { batch: batch as never });
    await expect(start({ maxSize: 0, timeout: '1s' })).rejects.toThrow(
      /^batch\.maxSize: must be a whole number from 1 to 10000/,
    );
    await expect(start({ maxSize: 10_001, timeout: '1s' })).rejects.toThrow(/^batch\.maxSize/);
    await expect(start({ maxSize: 1.5, timeout: '1s' })).rejects.toThrow(/^batch\.maxSize/);
    await expect(start({ maxSize: 5, timeout: '500ms' })).rejects.toThrow(/^batch\.timeout: must be from 1s/);
    await expect(start({ maxSize: 5, timeout: '2d' })).rejects.toThrow(/^batch\.timeout: must be from 1s to 1d/);
    await expect(start({ maxSize: 5 })).rejects.toThrow(/^batch\.timeout/);
    await expect(start({ key: 'input.user', maxSize: 5, timeout: '1s' })).rejects.toThrow(
      /^batch\.key: 'input\.user' is not in/,
    );
    await expect(engine.start(three, { k: 'a', n: 1 }, { id: 'mine' })).rejects.toThrow(/^id: .*no run id/);
    const both = engine.start(three, { k: 'a', n: 1 }, { debounce: { period: '1s' } });
    await expect(both).rejects.toThrow(/^batch: cannot be combined with debounce/);
    expect(() =>
      workflow('x', { batch: { maxSize: 2, timeout: '1s' }, throttle: { limit: 1, period: '1s' } }, async () => 1),
    ).toThrow(/^batch: cannot be combined with throttle/);
    // maxSize 1: each start is its own run, begun at once
    const one = await engine.start(plain, { k: 'a', n: 7 }, { batch: { maxSize: 1, timeout: '1h' } });
    expect(await result(engine, one.id)).toEqual([7]);
  });
});
