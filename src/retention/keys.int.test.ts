import { describe, expect, it } from 'vitest';
import { RUN_EVENT } from '../runtime/events.js';
import { runStream } from '../runtime/pass/history.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { parseRetention } from './policy.js';

const throttled = workflow(
  'keys-throttled',
  { throttle: { key: 'input.k', limit: 1, period: '1s' } },
  async (_ctx, input: { k: string; n: number }) => input.n,
);
const debounced = workflow(
  'keys-debounced',
  { debounce: { key: 'input.k', period: '1s' } },
  async (_ctx, input: { k: string; n: number }) => input.n,
);
const patient = workflow(
  'keys-patient',
  { debounce: { key: 'input.k', period: '30s' } },
  async (_ctx, input: { k: string; n: number }) => input.n,
);

const batched = workflow(
  'keys-batched',
  { batch: { key: 'input.k', maxSize: 2, timeout: '30s' } },
  async (_ctx, inputs: Array<{ k: string; n: number }>) => inputs.map((i) => i.n),
);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('retention policy', () => {
  it('knows the keys kind', () => {
    expect(parseRetention('keys:7d')).toEqual({ keys: 7 * 86_400_000 });
  });
});

describe.each(backends)('pruning throttle and debounce keys on $name', (backend) => {
  it("deletes an idle key's stream and state, keeps a live key's, and a pruned key starts afresh", async () => {
    const { engine, close } = await testEngine(backend, { workflows: [throttled, debounced, patient], pollMs: 100 });
    try {
      const streams = async (prefix: string) =>
        (await engine.store.streamList({ prefix, limit: 100 })).map((s) => s.streamId).sort();
      const slot = (key: string) => engine.store.projectionGet({ name: 'throttle', key });
      const window = (key: string) => engine.store.projectionGet({ name: 'debounce', key });

      // idle: one start, its slot passes in 1 s; live: four starts, the last slot 3 s away
      await (await engine.start(throttled, { k: 'idle', n: 0 })).result({ pollMs: 100 });
      const busy = await Promise.all([1, 2, 3, 4].map((n) => engine.start(throttled, { k: 'busy', n })));
      // idle: its window closed and its run ended; open: its window is open for 30 s
      expect(await (await engine.start(debounced, { k: 'idle', n: 5 })).result({ pollMs: 100 })).toBe(5);
      const open = await engine.start(patient, { k: 'open', n: 6 });
      await sleep(1_100);

      const [dry] = await engine.retention.prune({ keys: 0 }, { dryRun: true });
      expect(dry).toMatchObject({ kind: 'keys', other: 2 });
      expect(await streams('throttle:')).toEqual(['throttle:keys-throttled:busy', 'throttle:keys-throttled:idle']);

      const [pruned] = await engine.retention.prune({ keys: 0 });
      expect(pruned).toMatchObject({ kind: 'keys', other: 2 });
      // the idle keys' events are gone: a throttle's start, a debounce's start and its timer's close
      expect(pruned!.events).toBe(1 + 2);
      expect(await streams('throttle:')).toEqual(['throttle:keys-throttled:busy']);
      expect(await streams('debounce:')).toEqual(['debounce:keys-patient:open']);
      expect(await slot('throttle:keys-throttled:idle')).toBeUndefined();
      expect(await slot('throttle:keys-throttled:busy')).toBeDefined();
      expect(await window('debounce:keys-patient:open')).toMatchObject({ runId: open.id });
      // a live key's stream keeps its events, and no lock event was left in it
      const busyEvents = await engine.journal.readStream('throttle:keys-throttled:busy');
      expect(busyEvents.map((e) => e.type)).toEqual(Array(4).fill(RUN_EVENT.throttleStarted));

      // the busy key's runs still keep 1 s apart; the pruned keys start afresh and work
      const slots = await Promise.all(
        busy.map(async (run) => {
          const events = await engine.journal.readStream(runStream(run.id));
          return (events.find((e) => e.type === RUN_EVENT.runThrottled)!.data as { until: number }).until;
        }),
      );
      slots.sort((a, b) => a - b);
      for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(1_000);
      const again = await Promise.all([7, 8].map((n) => engine.start(throttled, { k: 'idle', n })));
      const until = await Promise.all(
        again.map(async (run) => {
          const events = await engine.journal.readStream(runStream(run.id));
          return (events.find((e) => e.type === RUN_EVENT.runThrottled)!.data as { until: number }).until;
        }),
      );
      expect(Math.abs(until[1]! - until[0]!)).toBeGreaterThanOrEqual(1_000);
      expect(await Promise.all(again.map((r) => r.result({ pollMs: 100 })))).toEqual([7, 8]);
      expect(await (await engine.start(debounced, { k: 'idle', n: 9 })).result({ pollMs: 100 })).toBe(9);
      expect(await streams('debounce:')).toEqual(['debounce:keys-debounced:idle', 'debounce:keys-patient:open']);
      await engine.cancel(open.id);
    } finally {
      await close();
    }
  });

  it("deletes a batched key's stream once its batch closed, keeps an open batch's", async () => {
    const { engine, close } = await testEngine(backend, { workflows: [batched], pollMs: 100 });
    try {
      const streams = async () =>
        (await engine.store.streamList({ prefix: 'batching:', limit: 100 })).map((s) => s.streamId).sort();
      // full: two starts close the batch and its run runs; open: one start, its batch open for 30 s
      const full = [await engine.start(batched, { k: 'full', n: 1 }), await engine.start(batched, { k: 'full', n: 2 })];
      expect(await full[0]!.result({ pollMs: 100 })).toEqual([1, 2]);
      const open = await engine.start(batched, { k: 'open', n: 3 });
      expect(await streams()).toEqual(['batching:keys-batched:full', 'batching:keys-batched:open']);

      const [pruned] = await engine.retention.prune({ keys: 0 });
      expect(pruned).toMatchObject({ kind: 'keys', other: 1 });
      expect(await streams()).toEqual(['batching:keys-batched:open']);
      // the pruned key starts afresh; the open batch still takes the next start
      const again = [
        await engine.start(batched, { k: 'full', n: 4 }),
        await engine.start(batched, { k: 'full', n: 5 }),
      ];
      expect(again[0]!.id).toBe(again[1]!.id);
      expect(await again[0]!.result({ pollMs: 100 })).toEqual([4, 5]);
      const joined = await engine.start(batched, { k: 'open', n: 6 });
      expect(joined.id).toBe(open.id);
      expect(await open.result({ pollMs: 100 })).toEqual([3, 6]);
    } finally {
      await close();
    }
  });

  it('keeps the slot of a start that holds the key while the sweep looks at it', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [throttled], pollMs: 100 });
    try {
      const until = async (id: string) => {
        const events = await engine.journal.readStream(runStream(id));
        return (events.find((e) => e.type === RUN_EVENT.runThrottled)!.data as { until: number }).until;
      };
      await (await engine.start(throttled, { k: 'race', n: 0 })).result({ pollMs: 100 });
      // the key is idle now (its one slot passed): a sweep would delete it
      await sleep(1_100);
      let held = '';
      let sweep: Promise<unknown> = Promise.resolve();
      await engine.store.transaction(async (tx) => {
        held = (await engine.start(throttled, { k: 'race', n: 1 }, { tx })).id;
        // the sweep reads the key as idle (this start is not committed), then waits for the key's lock
        sweep = engine.retention.prune({ keys: 0 });
        await sleep(500);
      });
      const [pruned] = (await sweep) as Array<{ other: number }>;
      expect(pruned!.other).toBe(0);
      expect(await engine.store.projectionGet({ name: 'throttle', key: 'throttle:keys-throttled:race' })).toBeDefined();
      const next = await engine.start(throttled, { k: 'race', n: 2 });
      expect((await until(next.id)) - (await until(held))).toBeGreaterThanOrEqual(1_000);
      expect(await next.result({ pollMs: 100 })).toBe(2);
    } finally {
      await close();
    }
  });
});
