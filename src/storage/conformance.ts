import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError, LeaseLostError, NotFoundError } from '../errors.js';
import type { Cursor, StoredEvent, Store } from './store.js';
import { agentLedgerConformance } from './conformance-agents.js';
import { task, taskConformance } from './conformance-tasks.js';
import { insertClaimConformance } from './conformance-claims.js';
import { longrunConformance } from './conformance-longrun.js';
import { maintenanceConformance } from './conformance-maintenance.js';
import { readConformance } from './conformance-reads.js';
import { appendConformance } from './conformance-appends.js';
import { processConformance } from './conformance-processes.js';
import { projectionConformance } from './conformance-projections.js';

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
  // A committed reader may lag a commit (on PostgreSQL, until older transactions anywhere in the
  // cluster finish) but never skips: read pages until `count` events arrived.
  const readCommitted = async (
    count: number,
    after: Cursor = '',
    filter: { streamPrefix?: string; types?: string[] } = {},
  ) => {
    const out: StoredEvent[] = [];
    let cursor = after;
    const deadline = Date.now() + 10_000;
    while (out.length < count && Date.now() < deadline) {
      const page = await store.eventReadCommitted({ after: cursor, limit: 2, ...filter });
      if (page.events.length === 0 && !page.more) await sleep(5);
      for (const { event } of page.events) out.push(event);
      cursor = page.cursor;
    }
    expect((await store.eventReadCommitted({ after: cursor, limit: 10, ...filter })).events).toEqual([]);
    return { events: out, cursor };
  };

  describe('journal', () => {
    it('gives each stream gapless versions and every event a growing global position', async () => {
      const a = await store.eventAppend({ appends: [{ streamId: 's-1', events: [ev('A', { x: 1 }), ev('B')] }] });
      const b = await store.eventAppend({ appends: [{ streamId: 's-2', events: [ev('C')] }] });
      const c = await store.eventAppend({
        appends: [{ streamId: 's-1', events: [{ type: 'D', data: [1, 'two'], metadata: { correlationId: 'c-1' } }] }],
      });
      expect(a.events.map((e) => [e.streamId, e.version, e.type])).toEqual([
        ['s-1', 1, 'A'],
        ['s-1', 2, 'B'],
      ]);
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
      expect((await store.eventReadStream({ streamId: 's-1', fromVersion: 2, limit: 1 })).map((e) => e.type)).toEqual([
        'B',
      ]);
      expect((await store.eventReadStream({ streamId: 's-1', backwards: true })).map((e) => e.type)).toEqual([
        'D',
        'B',
        'A',
      ]);
      expect(
        (await store.eventReadStream({ streamId: 's-1', backwards: true, fromVersion: 2 })).map((e) => e.type),
      ).toEqual(['B', 'A']);
      expect(await store.eventReadStream({ streamId: 'nope' })).toEqual([]);
    });

    it('rejects a wrong expected version with ConflictError and writes nothing', async () => {
      await store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 0, events: [ev('Created')] }] });
      await expect(
        store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 0, events: [ev('Created')] }] }),
      ).rejects.toThrow(ConflictError);
      await expect(
        store.eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 5, events: [ev('X')] }] }),
      ).rejects.toThrow(/order-1 is at version 1, expected 5/);
      const ok = await store.eventAppend({
        appends: [{ streamId: 'order-1', expectedVersion: 1, events: [ev('Paid')] }],
      });
      expect(ok.events[0]?.version).toBe(2);
      expect((await store.eventReadStream({ streamId: 'order-1' })).map((e) => e.type)).toEqual(['Created', 'Paid']);
    });

    it('appends to several streams atomically: one conflict writes nothing anywhere', async () => {
      await store.eventAppend({ appends: [{ streamId: 'b', events: [ev('B1')] }] });
      await expect(
        store.eventAppend({
          appends: [
            { streamId: 'a', events: [ev('A1')] },
            { streamId: 'b', expectedVersion: 0, events: [ev('B2')] },
          ],
        }),
      ).rejects.toThrow(ConflictError);
      expect(await store.eventReadStream({ streamId: 'a' })).toEqual([]);
      const next = await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('A1')] }] });
      expect(next.events[0]?.version).toBe(1);
    });

    it('leaves nothing behind when a conflict is caught inside a transaction', async () => {
      await store.eventAppend({ appends: [{ streamId: 'c', events: [ev('C1')] }] });
      await store.transaction(async (tx) => {
        await expect(
          tx.eventAppend({
            appends: [
              { streamId: 'd', events: [ev('D1')] },
              { streamId: 'c', expectedVersion: 0, events: [ev('C2')] },
            ],
          }),
        ).rejects.toThrow(ConflictError);
        await tx.eventAppend({ appends: [{ streamId: 'c', expectedVersion: 1, events: [ev('C2')] }] });
      });
      expect((await store.eventReadStream({ streamId: 'c' })).map((e) => [e.type, e.version])).toEqual([
        ['C1', 1],
        ['C2', 2],
      ]);
      expect(await store.eventReadStream({ streamId: 'd' })).toEqual([]);
      expect((await store.eventAppend({ appends: [{ streamId: 'd', events: [ev('D1')] }] })).events[0]?.version).toBe(
        1,
      );
    });

    it('lets a transaction that lost a race for a stream catch the conflict and commit the rest', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let appended!: () => void;
      const first = new Promise<void>((resolve) => (appended = resolve));
      const winner = store.transaction(async (tx) => {
        await tx.eventAppend({ appends: [{ streamId: 'race', expectedVersion: 0, events: [ev('Won')] }] });
        appended();
        await held;
      });
      await first;
      const loser = store.transaction(async (tx) => {
        const lost = tx.eventAppend({ appends: [{ streamId: 'race', expectedVersion: 0, events: [ev('Lost')] }] });
        await expect(lost).rejects.toThrow(ConflictError);
        await tx.eventAppend({ appends: [{ streamId: 'after-race', events: [ev('Next')] }] });
      });
      // the loser waits for the winner's lock (PostgreSQL: the stream's row; SQLite: the database)
      setTimeout(release, 50);
      await Promise.all([winner, loser]);
      expect((await store.eventReadStream({ streamId: 'race' })).map((e) => e.type)).toEqual(['Won']);
      expect((await store.eventReadStream({ streamId: 'after-race' })).map((e) => e.type)).toEqual(['Next']);
    });

    it('returns the original events for a repeated idempotency key and writes nothing', async () => {
      const first = await store.eventAppend({
        idempotencyKey: 'k-1',
        appends: [{ streamId: 'x', events: [ev('A'), ev('B')] }],
      });
      const again = await store.eventAppend({
        idempotencyKey: 'k-1',
        appends: [{ streamId: 'x', events: [ev('A'), ev('B')] }],
      });
      expect(first.duplicate).toBe(false);
      expect(again.duplicate).toBe(true);
      expect(again.events).toEqual(first.events);
      expect(await store.eventReadStream({ streamId: 'x' })).toHaveLength(2);
    });

    it('keeps one event per idempotency key under concurrent appends', async () => {
      const other = await openAnother();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? store : other).eventAppend({
            idempotencyKey: 'same',
            appends: [{ streamId: 'y', events: [ev('Once')] }],
          }),
        ),
      );
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      expect(new Set(results.map((r) => r.events[0]?.position)).size).toBe(1);
      expect(await store.eventReadStream({ streamId: 'y' })).toHaveLength(1);
    });

    it('gives concurrent appenders of one stream consecutive versions', async () => {
      const other = await openAnother();
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? store : other).eventAppend({ appends: [{ streamId: 'hot', events: [ev(`E${i}`)] }] }),
        ),
      );
      const versions = (await store.eventReadStream({ streamId: 'hot' })).map((e) => e.version);
      expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
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

    it('commits an unread append with its transaction (and wakes its stream), and undoes it with it', async () => {
      const woken: string[] = [];
      const unlisten = await store.listen('events', (stream) => void woken.push(stream));
      await store.transaction(async (tx) => {
        await tx.eventAppend({ unread: true, appends: [{ streamId: 'u', events: [ev('A'), ev('B')] }] });
        await tx.eventAppend({ unread: true, appends: [{ streamId: 'u', events: [ev('C')] }] });
      });
      for (let i = 0; i < 100 && !woken.includes('u'); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      await unlisten();
      expect((await store.eventReadStream({ streamId: 'u' })).map((e) => [e.type, e.version])).toEqual([
        ['A', 1],
        ['B', 2],
        ['C', 3],
      ]);
      expect(woken).toContain('u');
      const undone = store.transaction(async (tx) => {
        await tx.eventAppend({ unread: true, appends: [{ streamId: 'u', events: [ev('D')] }] });
        await tx.projectionPut({ name: 'p', key: 'k', value: 1 });
        throw new Error('boom');
      });
      await expect(undone).rejects.toThrow('boom');
      expect(await store.eventReadStream({ streamId: 'u' })).toHaveLength(3);
    });

    it('calls back after a commit, never after a rollback, and at once outside a transaction; rollback callbacks the other way round', async () => {
      const calls: string[] = [];
      store.onCommit(() => calls.push('outside'));
      store.onRollback(() => calls.push('rollback outside'));
      await store.transaction(async (tx) => {
        tx.onCommit(() => calls.push('committed'));
        tx.onRollback(() => calls.push('rollback of a commit'));
        await tx.transaction(async (inner) => inner.onCommit(() => calls.push('nested')));
        expect(calls).toEqual(['outside']);
      });
      await expect(
        store.transaction(async (tx) => {
          tx.onCommit(() => calls.push('rolled back'));
          await tx.transaction(async (inner) => inner.onRollback(() => calls.push('nested rollback')));
          tx.onRollback(() => calls.push('rollback'));
          expect(calls).toEqual(['outside', 'committed', 'nested']);
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(calls).toEqual(['outside', 'committed', 'nested', 'nested rollback', 'rollback']);
    });

    it('reads committed events in order and resumes from a cursor', async () => {
      expect(await store.eventHead()).toBe('');
      for (let i = 0; i < 5; i++)
        await store.eventAppend({ appends: [{ streamId: `r-${i % 2}`, events: [ev(`E${i}`)] }] });
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
      const seenDuring = (await during).events.map((c) => c.event);
      const after = await readCommitted(2 - seenDuring.length, (await during).cursor);
      expect([...seenDuring, ...after.events].map((e) => e.type).sort()).toEqual(['A', 'B']);
    });
  });

  it('wakes listeners after an append with the stream and the version it reached, whatever another listener throws', async () => {
    const woken: [string, number | undefined][] = [];
    const failing = await store.listen('events', () => {
      throw new Error('a listener that fails');
    });
    const stop = await store.listen('events', (stream, version) => woken.push([stream, version]));
    await store.eventAppend({
      appends: [
        {
          streamId: 'wake-me',
          events: [
            { type: 'a', data: 1 },
            { type: 'b', data: 2 },
          ],
        },
      ],
    });
    await store.transaction(async (tx) => {
      await tx.eventAppend({ appends: [{ streamId: 'wake-me', events: [{ type: 'c', data: 3 }] }] });
    });
    const deadline = Date.now() + 5000;
    while (woken.filter(([s]) => s === 'wake-me').length < 2 && Date.now() < deadline) await sleep(10);
    await stop();
    await failing();
    expect(woken.filter(([s]) => s === 'wake-me')).toEqual([
      ['wake-me', 2],
      ['wake-me', 3],
    ]);
  });

  it('lists streams by prefix with their version and last append time', async () => {
    await store.eventAppend({
      appends: [
        {
          streamId: 'channel:b',
          events: [
            { type: 'm', data: 1 },
            { type: 'm', data: 2 },
          ],
        },
      ],
    });
    await store.eventAppend({ appends: [{ streamId: 'channel:a', events: [{ type: 'm', data: 1 }] }] });
    await store.eventAppend({ appends: [{ streamId: 'channelx', events: [{ type: 'm', data: 1 }] }] });
    const all = await store.streamList({ prefix: 'channel:', limit: 10 });
    expect(all.map((s) => [s.streamId, s.version])).toEqual([
      ['channel:a', 1],
      ['channel:b', 2],
    ]);
    const [last] = await store.eventReadStream({ streamId: 'channel:b', backwards: true, limit: 1 });
    expect(all[1]!.updatedAt).toBe(last!.timestamp);
    expect(
      (await store.streamList({ prefix: 'channel:', after: 'channel:a', limit: 10 })).map((s) => s.streamId),
    ).toEqual(['channel:b']);
    expect(await store.streamList({ prefix: 'channel:', limit: 1 })).toHaveLength(1);
  });

  projectionConformance({ store: () => store });

  describe('subscriptions', () => {
    it('creates once and keeps the cursor on a second ensure', async () => {
      const sub = await store.subscriptionEnsure({
        name: 's',
        streamPrefix: 'chan:',
        types: ['message'],
        ordered: true,
        from: 'beginning',
      });
      expect(sub).toMatchObject({
        name: 's',
        cursor: '',
        streamPrefix: 'chan:',
        types: ['message'],
        ordered: true,
        blockedReason: null,
      });
      await store.subscriptionLease({ name: 's', owner: 'w1', ttlMs: 10_000 });
      await store.subscriptionAdvance({ name: 's', owner: 'w1', cursor: 'c-1' });
      const again = await store.subscriptionEnsure({
        name: 's',
        streamPrefix: null,
        types: null,
        ordered: false,
        from: 'beginning',
      });
      expect(again.cursor).toBe('c-1');
      expect((await store.subscriptionList()).map((s) => s.name)).toEqual(['s']);
      await expect(store.subscriptionGet({ name: 'missing' })).rejects.toThrow(NotFoundError);
    });

    it('starts at the head when asked to start from the end', async () => {
      await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('Old')] }] });
      await readCommitted(1);
      const sub = await store.subscriptionEnsure({
        name: 'late',
        streamPrefix: null,
        types: null,
        ordered: false,
        from: 'end',
      });
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
      expect((await store.subscriptionBlock({ name: 's', blockedReason: 'handler failed' })).blockedReason).toBe(
        'handler failed',
      );
      expect((await store.subscriptionBlock({ name: 's', blockedReason: null })).blockedReason).toBeNull();
      const [event] = (await store.eventAppend({ appends: [{ streamId: 'a', events: [ev('Bad', { n: 1 })] }] })).events;
      await store.parkedAdd({ subscription: 's', event: event!, error: 'Error: nope', attempts: 5 });
      const [parked] = await store.parkedList({ subscription: 's' });
      expect(parked).toMatchObject({
        subscription: 's',
        position: event!.position,
        error: 'Error: nope',
        attempts: 5,
        status: 'parked',
      });
      expect(parked?.event).toEqual(event);
      const retry = await store.parkedSetStatus({ subscription: 's', position: event!.position, status: 'retry' });
      expect(retry.status).toBe('retry');
      expect(await store.parkedList({ subscription: 's', status: 'parked' })).toEqual([]);
      expect(await store.parkedList({ subscription: 's', status: 'retry' })).toHaveLength(1);
      await expect(store.parkedSetStatus({ subscription: 's', position: 999_999, status: 'skipped' })).rejects.toThrow(
        NotFoundError,
      );
    });
  });
  taskConformance({ store: () => store, openAnother });
  insertClaimConformance({ store: () => store });
  longrunConformance({ store: () => store, openAnother });
  agentLedgerConformance({ store: () => store });
  maintenanceConformance(() => store);
  readConformance({ store: () => store });
  appendConformance({ store: () => store });
  processConformance({ store: () => store });

  describe('migrations', () => {
    it('lets two processes open one database at once', async () => {
      const [a, b] = await Promise.all([openAnother(), openAnother()]);
      await a.eventAppend({ appends: [{ streamId: 'm', events: [ev('A')] }] });
      expect(await b.eventReadStream({ streamId: 'm' })).toHaveLength(1);
      expect((await b.status()).schemaVersion).toBe((await store.status()).schemaVersion);
    });
  });
}
