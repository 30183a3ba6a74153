import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError, LeaseLostError, NotFoundError } from '../errors.js';
import type { Cursor, NewTask, StoredEvent, Store } from './store.js';

/**
 * The semantics every backend must have. It runs unchanged against each (`sqlite.int.test.ts`,
 * `postgres.int.test.ts`); `create` gives the location of a fresh, empty database and `open`
 * opens a store on a location, so a test can open a second "process" on the same database.
 */
export function storeConformance(create: () => Promise<string>, open: (location: string) => Promise<Store>): void {
  let location: string;
  let store: Store;
  const others: Store[] = [];
  const openAnother = async () => {
    const another = await open(location);
    others.push(another);
    return another;
  };
  beforeEach(async () => {
    location = await create();
    store = await open(location);
  });
  afterEach(async () => {
    for (const another of others.splice(0)) await another.close();
    await store.close();
  });

  const ev = (type: string, data: unknown = {}) => ({ type, data });
  const task = (queue: string, over: Partial<NewTask> = {}): NewTask => ({
    id: `task_${Math.random().toString(36).slice(2)}`,
    queue,
    payload: { n: 1 },
    idempotencyKey: null,
    orderingKey: null,
    runAt: null,
    priority: 0,
    maxAttempts: 3,
    ...over,
  });
  // A committed reader may lag a commit (on PostgreSQL, until older transactions anywhere in the
  // cluster finish) but never skips: read pages until `count` events arrived.
  const readCommitted = async (count: number, after: Cursor = '', filter: { streamPrefix?: string; types?: string[] } = {}) => {
    const out: StoredEvent[] = [];
    let cursor = after;
    const deadline = Date.now() + 10_000;
    while (out.length < count && Date.now() < deadline) {
      const page = await store.eventReadCommitted({ after: cursor, limit: 2, ...filter });
      if (page.length === 0) await sleep(5);
      for (const { event, cursor: next } of page) {
        out.push(event);
        cursor = next;
      }
    }
    expect(await store.eventReadCommitted({ after: cursor, limit: 10, ...filter })).toEqual([]);
    return { events: out, cursor };
  };

  describe('journal', () => {
    it('gives each stream gapless versions and every event a growing global position', async () => {
      const a = await store.eventAppend({ appends: [{ streamId: 's-1', events: [ev('A', { x: 1 }), ev('B')] }] });
      const b = await store.eventAppend({ appends: [{ streamId: 's-2', events: [ev('C')] }] });
      const c = await store.eventAppend({ appends: [{ streamId: 's-1', events: [{ type: 'D', data: [1, 'two'], metadata: { correlationId: 'c-1' } }] }] });
      expect(a.events.map((e) => [e.streamId, e.version, e.type])).toEqual([['s-1', 1, 'A'], ['s-1', 2, 'B']]);
      expect(b.events[0]?.version).toBe(1);
      expect(c.events[0]?.version).toBe(3);
      const positions = [...a.events, ...b.events, ...c.events].map((e) => e.position);
      expect([...positions].sort((x, y) => x - y)).toEqual(positions);
      expect(new Set(positions).size).toBe(4);

      const stream = await store.eventReadStream({ streamId: 's-1' });
      expect(stream.map((e) => e.type)).toEqual(['A', 'B', 'D']);
      expect(stream[0]?.data).toEqual({ x: 1 });
      expect(stream[2]?.data).toEqual([1, 'two']);
      expect(stream[2]?.metadata).toEqual({ correlationId: 'c-1' });
      expect(stream[0]?.timestamp).toBeGreaterThan(Date.now() - 60_000);
      expect((await store.eventReadStream({ streamId: 's-1', fromVersion: 2, limit: 1 })).map((e) => e.type)).toEqual(['B']);
      expect((await store.eventReadStream({ streamId: 's-1', backwards: true })).map((e) => e.type)).toEqual(['D', 'B', 'A']);
      expect((await store.eventReadStream({ streamId: 's-1', backwards: true, fromVersion: 2 })).map((e) => e.type)).toEqual(['B', 'A']);
      expect(await store.eventReadStream({ streamId: 'nope' })).toEqual([]);
    });

    it('rejects a wrong expected version with ConflictError and writes nothing', async () => {
      await store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 0, events: [ev('Created')] }] });
      await expect(store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 0, events: [ev('Created')] }] })).rejects.toThrow(ConflictError);
      await expect(store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 5, events: [ev('X')] }] })).rejects.toThrow(
        /order-1 is at version 1, expected 5/,
      );
      const ok = await store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 1, events: [ev('Paid')] }] });
      expect(ok.events[0]?.version).toBe(2);
      expect((await store.eventReadStream({ streamId: 'order-1' })).map((e) => e.type)).toEqual(['Created', 'Paid']);
    });

    it('appends to several streams atomically: one conflict writes nothing anywhere', async () => {
      await store.eventAppend({ appends: [{ streamId: 'b', events: [ev('B1')] }] });
      await expect(
        store.eventAppend({ appends: [{ streamId: 'a', events: [ev('A1')] }, { streamId: 'b', expectedVersion: 0, events: [ev('B2')] }] }),
      ).rejects.toThrow(ConflictError);
      expect(await store.eventReadStream({ streamId: 'a' })).toEqual([]);
      const next = await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('A1')] }] });
      expect(next.events[0]?.version).toBe(1);
    });

    it('leaves nothing behind when a conflict is caught inside a transaction', async () => {
      await store.eventAppend({ appends: [{ streamId: 'c', events: [ev('C1')] }] });
      await store.transaction(async (tx) => {
        await expect(
          tx.eventAppend({ appends: [{ streamId: 'd', events: [ev('D1')] }, { streamId: 'c', expectedVersion: 0, events: [ev('C2')] }] }),
        ).rejects.toThrow(ConflictError);
        await tx.eventAppend({ appends: [{ streamId: 'c', expectedVersion: 1, events: [ev('C2')] }] });
      });
      expect((await store.eventReadStream({ streamId: 'c' })).map((e) => [e.type, e.version])).toEqual([['C1', 1], ['C2', 2]]);
      expect(await store.eventReadStream({ streamId: 'd' })).toEqual([]);
      expect((await store.eventAppend({ appends: [{ streamId: 'd', events: [ev('D1')] }] })).events[0]?.version).toBe(1);
    });

    it('returns the original events for a repeated idempotency key and writes nothing', async () => {
      const first = await store.eventAppend({ idempotencyKey: 'k-1', appends: [{ streamId: 'x', events: [ev('A'), ev('B')] }] });
      const again = await store.eventAppend({ idempotencyKey: 'k-1', appends: [{ streamId: 'x', events: [ev('A'), ev('B')] }] });
      expect(first.duplicate).toBe(false);
      expect(again.duplicate).toBe(true);
      expect(again.events).toEqual(first.events);
      expect(await store.eventReadStream({ streamId: 'x' })).toHaveLength(2);
    });

    it('keeps one event per idempotency key under concurrent appends', async () => {
      const other = await openAnother();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 ? store : other).eventAppend({ idempotencyKey: 'same', appends: [{ streamId: 'y', events: [ev('Once')] }] })),
      );
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      expect(new Set(results.map((r) => r.events[0]?.position)).size).toBe(1);
      expect(await store.eventReadStream({ streamId: 'y' })).toHaveLength(1);
    });

    it('gives concurrent appenders of one stream consecutive versions', async () => {
      const other = await openAnother();
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? store : other).eventAppend({ appends: [{ streamId: 'hot', events: [ev(`E${i}`)] }] })));
      const versions = (await store.eventReadStream({ streamId: 'hot' })).map((e) => e.version);
      expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    });

    it('filters readAll by stream prefix and types, from a position', async () => {
      await store.eventAppend({ appends: [{ streamId: 'task:1', events: [ev('task.enqueued'), ev('task.claimed')] }] });
      await store.eventAppend({ appends: [{ streamId: 'chan:1', events: [ev('message')] }] });
      await store.eventAppend({ appends: [{ streamId: 'task:2', events: [ev('task.enqueued')] }] });
      const all = await store.eventReadAll({});
      expect(all.map((e) => e.type)).toEqual(['task.enqueued', 'task.claimed', 'message', 'task.enqueued']);
      expect((await store.eventReadAll({ streamPrefix: 'task:' })).map((e) => e.streamId)).toEqual(['task:1', 'task:1', 'task:2']);
      expect((await store.eventReadAll({ types: ['task.enqueued'] })).map((e) => e.streamId)).toEqual(['task:1', 'task:2']);
      expect((await store.eventReadAll({ fromPosition: all[2]!.position })).map((e) => e.type)).toEqual(['message', 'task.enqueued']);
      expect((await store.eventReadAll({ streamPrefix: 'task:', limit: 1 })).length).toBe(1);
      expect(await store.eventReadAll({ streamPrefix: 'ta%' })).toEqual([]);
    });

    it('rolls back everything written in a transaction that throws', async () => {
      await expect(
        store.transaction(async (tx) => {
          await tx.eventAppend({ appends: [{ streamId: 'tx', events: [ev('A')] }] });
          await tx.projectionPut({ name: 'p', key: 'k', value: 1 });
          await tx.taskEnqueue({ tasks: [task('q')] });
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await store.eventReadStream({ streamId: 'tx' })).toEqual([]);
      expect(await store.projectionGet({ name: 'p', key: 'k' })).toBeUndefined();
      expect(await store.taskList({ queue: 'q', limit: 10 })).toEqual([]);
    });

    it('reads committed events in order and resumes from a cursor', async () => {
      expect(await store.eventHead()).toBe('');
      for (let i = 0; i < 5; i++) await store.eventAppend({ appends: [{ streamId: `r-${i % 2}`, events: [ev(`E${i}`)] }] });
      const first = await readCommitted(5);
      expect(first.events.map((e) => e.type)).toEqual(['E0', 'E1', 'E2', 'E3', 'E4']);
      expect(await store.eventHead()).toBe(first.cursor);
      await store.eventAppend({ appends: [{ streamId: 'r-9', events: [ev('E5')] }] });
      expect((await readCommitted(1, first.cursor)).events.map((e) => e.type)).toEqual(['E5']);
      const filtered = await readCommitted(1, '', { streamPrefix: 'r-1', types: ['E3'] });
      expect(filtered.events.map((e) => e.type)).toEqual(['E3']);
    });

    it('never lets a reader skip an event whose transaction commits after a later position', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let appendedA!: () => void;
      const aAppended = new Promise<void>((resolve) => (appendedA = resolve));
      const other = await openAnother();
      const slow = store.transaction(async (tx) => {
        await tx.eventAppend({ appends: [{ streamId: 'slow', events: [ev('A')] }] });
        appendedA();
        await gate;
      });
      await aAppended;
      const fast = other.eventAppend({ appends: [{ streamId: 'fast', events: [ev('B')] }] });
      await Promise.race([fast, sleep(300)]);
      const during = other.eventReadCommitted({ after: '', limit: 10 });
      await Promise.race([during, sleep(300)]);
      release();
      await Promise.all([slow, fast]);
      const seenDuring = (await during).map((c) => c.event);
      const after = await readCommitted(2 - seenDuring.length, (await during).at(-1)?.cursor ?? '');
      expect([...seenDuring, ...after.events].map((e) => e.type).sort()).toEqual(['A', 'B']);
    });
  });

  describe('projections', () => {
    it('stores, replaces and deletes values', async () => {
      await store.projectionPut({ name: 'balance', key: 'acct-1', value: { total: 5 } });
      await store.projectionPut({ name: 'balance', key: 'acct-1', value: { total: 7 } });
      expect(await store.projectionGet({ name: 'balance', key: 'acct-1' })).toEqual({ total: 7 });
      expect(await store.projectionGet({ name: 'other', key: 'acct-1' })).toBeUndefined();
      await store.projectionDelete({ name: 'balance', key: 'acct-1' });
      expect(await store.projectionGet({ name: 'balance', key: 'acct-1' })).toBeUndefined();
    });
  });

  describe('subscriptions', () => {
    it('creates once and keeps the cursor on a second ensure', async () => {
      const sub = await store.subscriptionEnsure({ name: 's', streamPrefix: 'chan:', types: ['message'], ordered: true, from: 'beginning' });
      expect(sub).toMatchObject({ name: 's', cursor: '', streamPrefix: 'chan:', types: ['message'], ordered: true, blockedReason: null });
      await store.subscriptionLease({ name: 's', owner: 'w1', ttlMs: 10_000 });
      await store.subscriptionAdvance({ name: 's', owner: 'w1', cursor: 'c-1' });
      const again = await store.subscriptionEnsure({ name: 's', streamPrefix: null, types: null, ordered: false, from: 'beginning' });
      expect(again.cursor).toBe('c-1');
      expect((await store.subscriptionList()).map((s) => s.name)).toEqual(['s']);
      await expect(store.subscriptionGet({ name: 'missing' })).rejects.toThrow(NotFoundError);
    });

    it('starts at the head when asked to start from the end', async () => {
      await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('Old')] }] });
      await readCommitted(1);
      const sub = await store.subscriptionEnsure({ name: 'late', streamPrefix: null, types: null, ordered: false, from: 'end' });
      await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('New')] }] });
      expect((await readCommitted(1, sub.cursor)).events.map((e) => e.type)).toEqual(['New']);
    });

    it('leases to one owner at a time and fences cursor advances', async () => {
      await store.subscriptionEnsure({ name: 's', streamPrefix: null, types: null, ordered: false, from: 'beginning' });
      expect(await store.subscriptionLease({ name: 's', owner: 'w1', ttlMs: 150 })).toMatchObject({ owner: 'w1' });
      expect(await store.subscriptionLease({ name: 's', owner: 'w2', ttlMs: 150 })).toBeNull();
      expect(await store.subscriptionLease({ name: 's', owner: 'w1', ttlMs: 150 })).toMatchObject({ owner: 'w1' });
      await expect(store.subscriptionAdvance({ name: 's', owner: 'w2', cursor: 'x' })).rejects.toThrow(LeaseLostError);
      await sleep(250);
      expect(await store.subscriptionLease({ name: 's', owner: 'w2', ttlMs: 10_000 })).toMatchObject({ owner: 'w2' });
      await expect(store.subscriptionAdvance({ name: 's', owner: 'w1', cursor: 'x' })).rejects.toThrow(LeaseLostError);
      await store.subscriptionRelease({ name: 's', owner: 'w2' });
      expect(await store.subscriptionLease({ name: 's', owner: 'w3', ttlMs: 10_000 })).toMatchObject({ owner: 'w3' });
      await expect(store.subscriptionLease({ name: 'missing', owner: 'w1', ttlMs: 1 })).rejects.toThrow(NotFoundError);
    });

    it('blocks and unblocks, and keeps parked events with their status', async () => {
      await store.subscriptionEnsure({ name: 's', streamPrefix: null, types: null, ordered: true, from: 'beginning' });
      expect((await store.subscriptionBlock({ name: 's', blockedReason: 'handler failed' })).blockedReason).toBe('handler failed');
      expect((await store.subscriptionBlock({ name: 's', blockedReason: null })).blockedReason).toBeNull();
      const [event] = (await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('Bad', { n: 1 })] }] })).events;
      await store.parkedAdd({ subscription: 's', event: event!, error: 'Error: nope', attempts: 5 });
      const [parked] = await store.parkedList({ subscription: 's' });
      expect(parked).toMatchObject({ subscription: 's', position: event!.position, error: 'Error: nope', attempts: 5, status: 'parked' });
      expect(parked?.event).toEqual(event);
      const retry = await store.parkedSetStatus({ subscription: 's', position: event!.position, status: 'retry' });
      expect(retry.status).toBe('retry');
      expect(await store.parkedList({ subscription: 's', status: 'parked' })).toEqual([]);
      expect(await store.parkedList({ subscription: 's', status: 'retry' })).toHaveLength(1);
      await expect(store.parkedSetStatus({ subscription: 's', position: 999_999, status: 'skipped' })).rejects.toThrow(NotFoundError);
    });
  });

  describe('tasks', () => {
    it('enqueues once per idempotency key and queue', async () => {
      const [first] = await store.taskEnqueue({ tasks: [task('q', { idempotencyKey: 'k' })] });
      const [again] = await store.taskEnqueue({ tasks: [task('q', { idempotencyKey: 'k', payload: { other: true } })] });
      const [elsewhere] = await store.taskEnqueue({ tasks: [task('q2', { idempotencyKey: 'k' })] });
      expect(first?.created).toBe(true);
      expect(again).toEqual({ task: first?.task, created: false });
      expect(elsewhere?.created).toBe(true);
      const batch = await store.taskEnqueue({ tasks: [task('q', { idempotencyKey: 'b' }), task('q', { idempotencyKey: 'b' }), task('q')] });
      expect(batch.map((r) => r.created)).toEqual([true, false, true]);
      expect(batch[1]?.task.id).toBe(batch[0]?.task.id);
      expect(await store.taskList({ queue: 'q', limit: 100 })).toHaveLength(3);
      expect(first?.task).toMatchObject({ queue: 'q', state: 'ready', payload: { n: 1 }, attempts: 0, maxAttempts: 3, idempotencyKey: 'k' });
    });

    it('claims by priority then age, skips future run-at, and leases with the given token', async () => {
      const now = await store.now();
      await store.taskEnqueue({ tasks: [task('q', { id: 't1' }), task('q', { id: 't2', priority: 5 }), task('q', { id: 't3', runAt: now + 60_000 }), task('q', { id: 't4' })] });
      const claimed = await store.taskClaim({ queue: 'q', limit: 2, leaseMs: 30_000, workerId: 'w1', leaseToken: 'L1' });
      expect(claimed.map((t) => t.id)).toEqual(['t2', 't1']);
      expect(claimed[0]).toMatchObject({ state: 'running', attempts: 1, leaseToken: 'L1', workerId: 'w1' });
      expect(claimed[0]!.leaseExpiresAt! - now).toBeGreaterThanOrEqual(29_000);
      const rest = await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w1', leaseToken: 'L2' });
      expect(rest.map((t) => t.id)).toEqual(['t4']);
      expect(await store.taskClaim({ queue: 'other', limit: 10, leaseMs: 1000, workerId: 'w1', leaseToken: 'L3' })).toEqual([]);
      expect(await store.taskNextRunAt({ queue: 'q' })).toBe(now + 60_000);
    });

    it('runs one task per ordering key at a time, in arrival order', async () => {
      await store.taskEnqueue({ tasks: [task('q', { id: 'a1', orderingKey: 'a' }), task('q', { id: 'a2', orderingKey: 'a', priority: 9 }), task('q', { id: 'b1', orderingKey: 'b' }), task('q', { id: 'a3', orderingKey: 'a' })] });
      const first = await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' });
      expect(first.map((t) => t.id).sort()).toEqual(['a1', 'b1']);
      expect(await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' })).toEqual([]);
      await store.taskFail({ id: 'a1', leaseToken: 'L1', error: 'retry me', retryDelayMs: 0 });
      const retried = await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L3' });
      expect(retried.map((t) => t.id)).toEqual(['a1']);
      await store.taskComplete({ items: [{ id: 'a1', leaseToken: 'L3', result: null }] });
      expect((await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L4' })).map((t) => t.id)).toEqual(['a2']);
    });

    it('moves the waiting tasks of an ordering key earlier, never later', async () => {
      const now = await store.now();
      await store.taskEnqueue({ tasks: [task('q', { id: 'later', orderingKey: 'run-1', runAt: now + 3_600_000 })] });
      expect(await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' })).toEqual([]);
      expect(await store.taskReschedule({ queue: 'q', orderingKey: 'run-1', runAt: now })).toBe(1);
      expect(await store.taskReschedule({ queue: 'q', orderingKey: 'run-1', runAt: now + 7_200_000 })).toBe(1);
      expect((await store.taskGet({ id: 'later' })).runAt).toBe(now);
      expect(await store.taskReschedule({ queue: 'q', orderingKey: 'other', runAt: now })).toBe(0);
      expect((await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' })).map((t) => t.id)).toEqual(['later']);
      expect(await store.taskReschedule({ queue: 'q', orderingKey: 'run-1', runAt: now })).toBe(0);
    });

    it('fences completion, failure and heartbeat by lease token', async () => {
      await store.taskEnqueue({ tasks: [task('q', { id: 't1' }), task('q', { id: 't2' })] });
      await store.taskClaim({ queue: 'q', limit: 2, leaseMs: 30_000, workerId: 'w', leaseToken: 'good' });
      expect(await store.taskHeartbeat({ leases: [{ id: 't1', leaseToken: 'good' }, { id: 't2', leaseToken: 'stale' }], leaseMs: 60_000 })).toEqual(['t1']);
      expect(await store.taskComplete({ items: [{ id: 't1', leaseToken: 'stale', result: 1 }] })).toEqual([]);
      await expect(store.taskFail({ id: 't1', leaseToken: 'stale', error: 'x', retryDelayMs: 0 })).rejects.toThrow(LeaseLostError);
      await expect(store.taskFail({ id: 'missing', leaseToken: 'good', error: 'x', retryDelayMs: 0 })).rejects.toThrow(NotFoundError);
      const done = await store.taskComplete({ items: [{ id: 't1', leaseToken: 'good', result: { ok: 1 } }, { id: 't2', leaseToken: 'good', result: null }] });
      expect(done.map((t) => t.id).sort()).toEqual(['t1', 't2']);
      expect(await store.taskGet({ id: 't1' })).toMatchObject({ state: 'completed', result: { ok: 1 }, leaseToken: null });
      expect(await store.taskComplete({ items: [{ id: 't1', leaseToken: 'good', result: 2 }] })).toEqual([]);
      await expect(store.taskGet({ id: 'missing' })).rejects.toThrow(NotFoundError);
    });

    it('schedules a retry after the delay, and goes dead when told to', async () => {
      await store.taskEnqueue({ tasks: [task('q', { id: 't1' })] });
      await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' });
      const before = await store.now();
      const retried = await store.taskFail({ id: 't1', leaseToken: 'L1', error: 'Error: flaky', retryDelayMs: 60_000 });
      expect(retried).toMatchObject({ state: 'ready', lastError: 'Error: flaky', leaseToken: null, attempts: 1 });
      expect(retried.runAt).toBeGreaterThanOrEqual(before + 60_000);
      expect(await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' })).toEqual([]);
      await store.taskEnqueue({ tasks: [task('q', { id: 't2' })] });
      await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L3' });
      const dead = await store.taskFail({ id: 't2', leaseToken: 'L3', error: 'TerminalError: no', retryDelayMs: null });
      expect(dead).toMatchObject({ state: 'dead', lastError: 'TerminalError: no' });
      expect((await store.taskList({ state: 'dead', limit: 10 })).map((t) => t.id)).toEqual(['t2']);
    });

    it('expires leases: the task is ready again, or dead when out of attempts, and the old token is fenced', async () => {
      await store.taskEnqueue({ tasks: [task('q', { id: 't1', maxAttempts: 2 })] });
      await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 50, workerId: 'w1', leaseToken: 'L1' });
      expect(await store.taskExpire({ limit: 10 })).toEqual([]);
      await sleep(120);
      const [expired] = await store.taskExpire({ limit: 10 });
      expect(expired).toMatchObject({ id: 't1', state: 'ready', leaseToken: null });
      expect(expired?.lastError).toMatch(/lease expired/);
      const [again] = await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 50, workerId: 'w2', leaseToken: 'L2' });
      expect(again?.attempts).toBe(2);
      expect(await store.taskComplete({ items: [{ id: 't1', leaseToken: 'L1', result: null }] })).toEqual([]);
      await sleep(120);
      expect((await store.taskExpire({ limit: 10 }))[0]).toMatchObject({ id: 't1', state: 'dead' });
    });

    it('redrives a dead task once', async () => {
      await store.taskEnqueue({ tasks: [task('q', { id: 't1' })] });
      await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' });
      await store.taskFail({ id: 't1', leaseToken: 'L1', error: 'bad', retryDelayMs: null });
      const first = await store.taskRedrive({ id: 't1' });
      expect(first.redriven).toBe(true);
      expect(first.task).toMatchObject({ state: 'ready', attempts: 0 });
      expect((await store.taskRedrive({ id: 't1' })).redriven).toBe(false);
      await expect(store.taskRedrive({ id: 'missing' })).rejects.toThrow(NotFoundError);
      expect(await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' })).toHaveLength(1);
    });

    it('lists by queue and state with a cursor, and counts in status', async () => {
      await store.taskEnqueue({ tasks: ['t1', 't2', 't3'].map((id) => task('q', { id })) });
      await store.taskEnqueue({ tasks: [task('other', { id: 't4' })] });
      const page1 = await store.taskList({ queue: 'q', limit: 2 });
      const page2 = await store.taskList({ queue: 'q', limit: 2, afterId: page1.at(-1)!.id });
      expect([...page1, ...page2].map((t) => t.id)).toEqual(['t1', 't2', 't3']);
      expect((await store.taskList({ state: 'ready', limit: 10 })).length).toBe(4);
      const status = await store.status();
      expect(status).toMatchObject({ dialect: store.dialect, tasks: { ready: 4, running: 0, completed: 0, dead: 0 } });
      expect(status.schemaVersion).toBeGreaterThanOrEqual(1);
    });

    it('never hands two concurrent claimers the same task or two tasks of one ordering key', async () => {
      const other = await openAnother();
      const tasks = Array.from({ length: 60 }, (_, i) => task('q', { id: `t${String(i).padStart(3, '0')}`, orderingKey: `k${i % 3}` }));
      await store.taskEnqueue({ tasks });
      const running = new Map<string, string>();
      const order: string[] = [];
      const claimer = async (s: Store, name: string) => {
        for (let idle = 0; idle < 50; ) {
          const claimed = await s.taskClaim({ queue: 'q', limit: 3, leaseMs: 30_000, workerId: name, leaseToken: `${name}-${order.length}` });
          if (claimed.length === 0) {
            idle++;
            await sleep(2);
            continue;
          }
          for (const t of claimed) {
            expect(running.has(t.orderingKey!), `two tasks of ${t.orderingKey} at once`).toBe(false);
            running.set(t.orderingKey!, t.id);
            order.push(t.id);
          }
          await sleep(1);
          for (const t of claimed) running.delete(t.orderingKey!);
          await s.taskComplete({ items: claimed.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: null })) });
        }
      };
      await Promise.all([claimer(store, 'a'), claimer(other, 'b'), claimer(store, 'c'), claimer(other, 'd')]);
      expect([...order].sort()).toEqual(tasks.map((t) => t.id));
      for (const key of ['k0', 'k1', 'k2']) {
        const ofKey = order.filter((id) => tasks.find((t) => t.id === id)?.orderingKey === key);
        expect(ofKey).toEqual([...ofKey].sort());
      }
    });
  });

  describe('migrations', () => {
    it('lets two processes open one database at once', async () => {
      const [a, b] = await Promise.all([openAnother(), openAnother()]);
      await a.eventAppend({ appends: [{ streamId: 'm', events: [ev('A')] }] });
      expect(await b.eventReadStream({ streamId: 'm' })).toHaveLength(1);
      expect((await b.status()).schemaVersion).toBe((await store.status()).schemaVersion);
    });
  });
}
