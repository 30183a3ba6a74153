import { describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { ValidationError } from '../../errors.js';
import { backends } from '../../testing/backends.js';
import { testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import { workflow } from '../workflow.js';

const last = workflow(
  'debounce-last',
  { debounce: { key: 'input.chat', period: '2s' } },
  async (ctx, input: { chat: string; n: number }) => ctx.step('echo', async () => input),
);
const all = workflow(
  'debounce-all',
  { debounce: { key: 'input.chat', period: '2s', mode: 'all' } },
  // the run's input is the list of the window's inputs; each start gives one
  async (ctx, input: { chat: string; n: number }) =>
    ctx.step('echo', async () => (input as unknown as Array<{ n: number }>).map((i) => i.n)),
);
const capped = workflow(
  'debounce-capped',
  { debounce: { key: 'input.chat', period: '1s', maxWait: '2s' } },
  async (_ctx, input: { chat: string; n: number }) => input.n,
);

const limited = workflow(
  'debounce-limited',
  { debounce: { key: 'input.chat', period: '1s' }, concurrency: [{ limit: 1 }] },
  async (ctx, input: { chat: string; holdMs: number }) =>
    ctx.step('hold', async () => {
      await new Promise((resolve) => setTimeout(resolve, input.holdMs));
      return input.chat;
    }),
);

const signalled = workflow(
  'debounce-signalled',
  { debounce: { key: 'input.chat', period: '1s', mode: 'all' } },
  async (ctx, input: { chat: string; n: number }) => {
    const go = await ctx.waitForEvent<{ at: number }>('go', { timeout: '30s' });
    return { ns: (input as unknown as Array<{ n: number }>).map((i) => i.n), go };
  },
);

const holder = workflow(
  'debounce-holder',
  { concurrency: [{ key: 'shared', limit: 1, scope: 'global' }] },
  async (ctx) => ctx.waitForEvent('release', { timeout: '30s' }),
);
const queued = workflow(
  'debounce-queued',
  {
    debounce: { key: 'input.chat', period: '2s', mode: 'all' },
    concurrency: [{ key: 'shared', limit: 1, scope: 'global' }],
  },
  async (ctx, input: { chat: string; n: number }) => {
    const go = await ctx.waitForEvent<{ at: number }>('go', { timeout: '30s' });
    return { ns: (input as unknown as Array<{ n: number }>).map((i) => i.n), go };
  },
);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const numbers = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe.each(backends)('debounced starts on $name', (backend) => {
  // each test on its own database, side by side: most of their time is waiting for windows to close
  const test = (name: string, body: (engine: Engine) => Promise<void>) =>
    it.concurrent(name, async () => {
      const { engine, close } = await testEngine(backend, {
        workflows: [last, all, capped, limited, signalled, holder, queued],
        pollMs: 100,
      });
      try {
        await body(engine);
      } finally {
        await close();
      }
    });
  const events = (engine: Engine, id: string) => engine.journal.readStream(runStream(id));
  const result = (engine: Engine, id: string) => engine.runtime.handle(id).result({ pollMs: 100 });

  test('coalesces 20 starts of a key into one run (its last input, or all in order), one run per key', async (engine) => {
    const [lastIds, allIds, concurrent, keys] = await Promise.all([
      (async () => {
        const ids: string[] = [];
        for (const n of numbers(1, 20)) ids.push((await engine.start(last, { chat: 'a', n })).id);
        return ids;
      })(),
      (async () => {
        const ids: string[] = [];
        for (const n of numbers(1, 20)) ids.push((await engine.start(all, { chat: 'a', n })).id);
        return ids;
      })(),
      Promise.all(numbers(100, 20).map((n) => engine.start(all, { chat: 'z', n }))),
      Promise.all(['b', 'c', 'd'].map((chat) => engine.start(last, { chat, n: 0 }))),
    ]);
    expect(new Set(lastIds).size).toBe(1);
    expect(new Set(allIds).size).toBe(1);
    expect(new Set(concurrent.map((h) => h.id)).size).toBe(1);
    expect(new Set([lastIds[0], ...keys.map((h) => h.id)]).size).toBe(4);

    const opened = (await events(engine, lastIds[0]!)).find((e) => e.type === RUN_EVENT.runDebounced);
    expect((opened?.data as { waitingFor?: string } | undefined)?.waitingFor).toMatch(/^debounced until \d{4}-/);
    // what the read side shows of a run whose window is open: waiting, why, and the input it will run with
    const waiting = await engine.run(allIds[0]!);
    if (waiting.status === 'waiting') expect(waiting.waitingFor).toMatch(/^debounced until \d{4}-/);
    expect(waiting.input).toEqual(numbers(1, 20).map((n) => ({ chat: 'a', n })));
    expect((await engine.run(lastIds[0]!)).input).toEqual({ chat: 'a', n: 20 });
    expect(await result(engine, lastIds[0]!)).toEqual({ chat: 'a', n: 20 });
    expect(await result(engine, allIds[0]!)).toEqual(numbers(1, 20));
    // concurrent starts join in the order they took the key's lock
    expect([...((await result(engine, concurrent[0]!.id)) as number[])].sort()).toEqual(numbers(100, 20));
    for (const [i, chat] of ['b', 'c', 'd'].entries())
      expect(await result(engine, keys[i]!.id)).toEqual({ chat, n: 0 });

    const journal = await events(engine, lastIds[0]!);
    expect(journal.filter((e) => e.type === RUN_EVENT.runDebounced)).toHaveLength(20);
    expect(journal.filter((e) => e.type === RUN_EVENT.stepStarted)).toHaveLength(1);
  });

  test('refuses a run id, a throttle too, a missing key; ends a window with its cancelled run; caps a busy key by maxWait', async (engine) => {
    await expect(engine.start(last, { chat: 'a', n: 1 }, { id: 'mine' })).rejects.toThrow(/^id: .*no run id/);
    const both = engine.start(last, { chat: 'a', n: 1 }, { throttle: { limit: 1, period: '1s' } });
    await expect(both).rejects.toBeInstanceOf(ValidationError);
    await expect(engine.start(last, { n: 1 } as never)).rejects.toThrow(/debounce\.key/);
    // a run cancelled in its window takes no more input: the next start of its key is a new run
    const cancelled = await engine.start(last, { chat: 'x', n: 1 });
    await engine.cancel(cancelled.id);
    await expect(cancelled.result({ pollMs: 100 })).rejects.toThrow(/cancelled/);
    expect((await engine.start(last, { chat: 'x', n: 2 })).id).not.toBe(cancelled.id);

    const ids: string[] = [];
    // a start every 300 ms for 3.3 s: never 1 s quiet, so only maxWait (2 s) closes the first window
    for (const n of numbers(0, 12)) {
      ids.push((await engine.start(capped, { chat: 'a', n })).id);
      await sleep(300);
    }
    const runs = [...new Set(ids)];
    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(await result(engine, runs[0]!)).toBe(ids.filter((id) => id === runs[0]).length - 1);
    expect(await result(engine, runs.at(-1)!)).toBe(11);
    const after = await engine.start(capped, { chat: 'a', n: 99 });
    expect(runs).not.toContain(after.id);
    expect(await after.result({ pollMs: 100 })).toBe(99);
  });

  test('runs a debounced run whose window closed while it waited for a concurrency slot, once the slot frees', async (engine) => {
    const a = await engine.start(limited, { chat: 'a', holdMs: 2_500 });
    const b = await engine.start(limited, { chat: 'b', holdMs: 0 });
    expect(await a.result({ pollMs: 100 })).toBe('a');
    // b's window closed (1 s) while a held the one slot (2.5 s): its first pass is queued when it gets the slot
    expect(await b.result({ pollMs: 100 })).toBe('b');
  });

  test('a signal sent in the window is kept for the run, which begins only once its window closed, with every input', async (engine) => {
    const first = await engine.start(signalled, { chat: 'a', n: 1 });
    await engine.signal(first.id, 'go', { at: 1 });
    await sleep(300);
    // the signal did not begin the run: this start joins the window it is still in
    const second = await engine.start(signalled, { chat: 'a', n: 2 });
    expect(second.id).toBe(first.id);
    expect((await engine.run(first.id)).status).toBe('waiting');
    expect(await result(engine, first.id)).toEqual({ ns: [1, 2], go: { at: 1 } });
    const journal = await events(engine, first.id);
    const began = journal.find((e) => e.type === RUN_EVENT.waitStarted || e.type === RUN_EVENT.waitCompleted);
    const lastStart = journal.filter((e) => e.type === RUN_EVENT.runDebounced).at(-1)!;
    // the window closed 1 s after its last start (its `until`): nothing of the run's code ran before that
    expect(began!.timestamp).toBeGreaterThanOrEqual((lastStart.data as { until: number }).until);
  });

  test('a signal to a debounced run let into its concurrency slot while its window is open waits for the window too', async (engine) => {
    const held = await engine.start(holder, null);
    await sleep(300);
    const first = await engine.start(queued, { chat: 'a', n: 1 });
    // the holder ends: the debounced run gets the slot, its window still open for ~2 s
    await engine.signal(held.id, 'release', null);
    await held.result({ pollMs: 50 });
    await sleep(200);
    await engine.signal(first.id, 'go', { at: 1 });
    await sleep(300);
    const second = await engine.start(queued, { chat: 'a', n: 2 });
    expect(second.id).toBe(first.id);
    expect(await result(engine, first.id)).toEqual({ ns: [1, 2], go: { at: 1 } });
  });
});
