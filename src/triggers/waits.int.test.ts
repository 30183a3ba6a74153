import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { CancelledError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { triggers, type TriggerService } from './service.js';
import { createRunStarter } from './starter.js';

const payment = workflow('await-payment', async (ctx, input: { order_id: number; lookback?: string }) => {
  const paid = await ctx.waitForEvent<{ id: string; detail: { amount: number } }>('payment.received', {
    match: 'data.order_id == input.order_id',
    timeout: '1m',
    ...(input.lookback ? { lookback: input.lookback } : {}),
  });
  return paid && { event: paid.id, amount: paid.detail.amount };
});

const order = workflow(
  'order',
  { cancelOn: [{ event: 'order.cancelled', match: 'data.order_id == input.order_id' }] },
  async (ctx) => ctx.sleep('forever', '1h'),
);

// two waits for one event type side by side, each for its own document
const both = workflow('both-docs', async (ctx) => {
  const wait = (doc: string) => (c: typeof ctx) =>
    c.waitForEvent<{ detail: { doc: string } }>('doc.done', { match: { path: 'doc', value: doc }, timeout: '1m' });
  const { a, b } = await ctx.parallel('docs', { a: wait('a'), b: wait('b') });
  const doc = (r: typeof a) => (r.status === 'success' ? r.output?.detail.doc : r.error.message);
  return { a: doc(a), b: doc(b) };
});

// two payments of one order, one after the other, each wait looking back 10 minutes
const twice = workflow('two-payments', async (ctx, _input: { order_id: number }) => {
  const wait = () =>
    ctx.waitForEvent<{ id: string }>('payment.received', {
      match: 'data.order_id == input.order_id',
      timeout: '15s',
      lookback: '10m',
    });
  const first = await wait();
  const second = await wait();
  return [first?.id ?? null, second?.id ?? null];
});

const brief = workflow('brief-wait', async (ctx, input: { order_id: number }) =>
  ctx.waitForEvent('payment.received', { match: { path: 'order_id', value: input.order_id }, timeout: 2000 }),
);

const badMatch = workflow('bad-match', async (ctx) => ctx.waitForEvent('x', { match: 'input.nope == data.id' }));

describe.each(backends)('runs waiting for business events on $name', (backend) => {
  let engine: Engine;
  let service: TriggerService;
  let close: () => Promise<void>;

  const put = (type: string, detail: Record<string, unknown>, id?: string) =>
    service.events.put([{ source: 'shop', 'detail-type': type, detail, ...(id ? { id } : {}) }]);
  const status = async (id: string) => (await engine.run(id)).status;
  // a wait or a sleep under way: the run holds no worker
  const waiting = (id: string) => eventually(async () => ['waiting', 'sleeping'].includes(await status(id)));

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    engine.register(payment, order, brief, badMatch, both, twice);
    const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const starter = createRunStarter({ engine, store: engine.store, workflows });
    service = triggers(engine, engine.store, { starter, schedulerEnabled: false });
    await service.start();
    close = async () => {
      await service.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  it('resumes only the run whose field matches, by correlation; one event resumes every run waiting on it', async () => {
    const runs = await Promise.all([1, 2, 2, 3].map((n) => engine.start(payment, { order_id: n })));
    await Promise.all(runs.map((r) => waiting(r.id)));
    const { event } = (await put('payment.received', { order_id: '2', amount: 30 }))[0]!; // "2" matches 2
    await put('payment.other', { order_id: 1, amount: 1 });
    expect(await runs[1]!.result()).toEqual({ event: event.id, amount: 30 });
    expect(await runs[2]!.result()).toEqual({ event: event.id, amount: 30 });
    expect(await status(runs[0]!.id)).toBe('waiting');
    expect(await status(runs[3]!.id)).toBe('waiting');
    await put('payment.received', { order_id: 1, amount: 10 });
    expect(await runs[0]!.result()).toMatchObject({ amount: 10 });
    expect(await status(runs[3]!.id)).toBe('waiting');
  });

  it('takes an event that arrived before the wait only within its lookback', async () => {
    await put('payment.received', { order_id: 7, amount: 70 }, 'evt-early');
    const within = await engine.start(payment, { order_id: 7, lookback: '10m' });
    expect(await within.result()).toEqual({ event: 'evt-early', amount: 70 });
    const without = await engine.start(payment, { order_id: 7 });
    await waiting(without.id);
    // the same event again (a redelivery by its id) stores nothing and resumes nothing
    const [again] = await put('payment.received', { order_id: 7, amount: 70 }, 'evt-early');
    expect(again!.created).toBe(false);
    await put('payment.received', { order_id: 7, amount: 71 }, 'evt-late');
    expect(await without.result()).toEqual({ event: 'evt-late', amount: 71 });
  });

  it('cancels a run on a matching event (cancelOn), and no other', async () => {
    const a = await engine.start(order, { order_id: 1 });
    const b = await engine.start(order, { order_id: 2 });
    await Promise.all([waiting(a.id), waiting(b.id)]);
    await put('order.cancelled', { order_id: 2 });
    await expect(b.result()).rejects.toBeInstanceOf(CancelledError);
    const requested = (await engine.journal.readStream(`run:${b.id}`)).find((e) => e.type === 'run.cancel_requested');
    expect((requested!.data as { reason: string }).reason).toMatch(/^event order\.cancelled evt_/);
    expect(await status(a.id)).toBe('sleeping');
  });

  it('refuses a match that names no event field or an input field the run lacks, naming it', async () => {
    const run = await engine.start(badMatch, {});
    await expect(run.result()).rejects.toThrow(/waitForEvent\(x\)\.match: 'input.nope' is not in the run's input/);
    await expect(engine.start(order, { other: 1 } as never)).rejects.toThrow(
      /cancelOn\[0\]\.match: 'input.order_id' is not in the run's input/,
    );
  });
  it('gives each of two waits for one event type only the event its match names, whichever waits first', async () => {
    const run = await engine.start(both, {});
    await waiting(run.id);
    await put('doc.done', { doc: 'b' });
    // the wait for b takes it; the wait for a, first in call order, must not
    await eventually(async () =>
      (await engine.journal.readStream(`run:${run.id}`)).some((e) => e.type === 'wait.completed'),
    );
    await put('doc.done', { doc: 'a' });
    expect(await run.result()).toEqual({ a: 'a', b: 'b' });
  });

  it('passes over an event for a run retention deleted: the waits of other runs still get theirs', async () => {
    const gone = await engine.start(order, { order_id: 5 });
    await waiting(gone.id);
    await engine.cancel(gone.id);
    await expect(gone.result()).rejects.toBeInstanceOf(CancelledError);
    await eventually(async () => (await engine.store.taskStats()).every((q) => q.running + q.ready === 0));
    const [pruned] = await engine.retention.prune({ runs: 0 }, { pauseMs: 0 });
    expect(pruned!.runs).toBe(1);
    await put('order.cancelled', { order_id: 5 });
    const paid = await engine.start(payment, { order_id: 6 });
    await waiting(paid.id);
    await put('payment.received', { order_id: 6, amount: 60 });
    expect(await paid.result()).toMatchObject({ amount: 60 });
  });
  it('a second wait whose lookback finds only the event its run already took waits for the next one', async () => {
    const run = await engine.start(twice, { order_id: 8 });
    await waiting(run.id);
    const [first] = await put('payment.received', { order_id: 8, amount: 1 }, 'evt-first');
    await eventually(async () =>
      (await engine.journal.readStream(`run:${run.id}`)).some((e) => e.type === 'wait.completed'),
    );
    await eventually(
      async () =>
        (await engine.journal.readStream(`run:${run.id}`)).filter((e) => e.type === 'wait.started').length === 2,
    );
    await put('payment.received', { order_id: 8, amount: 2 }, 'evt-second');
    expect(first!.created).toBe(true);
    expect(await run.result()).toEqual(['evt-first', 'evt-second']);
  });

  it('takes a wait out of its index when it ends without an event (its timeout): no row is left behind', async () => {
    const row = () =>
      engine.store.projectionGet({ name: 'event-wait', key: 'payment.received\u001forder_id\u001f4242' });
    const run = await engine.start(brief, { order_id: 4242 });
    await eventually(async () => (await row()) !== undefined);
    expect(await run.result()).toBeNull();
    await eventually(async () => (await row()) === undefined);
  });
});
