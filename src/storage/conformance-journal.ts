import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ConflictError } from '../errors.js';
import { task } from './conformance-rows.js';
import type { Cursor, Store, StoredEvent } from './store.js';

const ev = (type: string, data: unknown = {}) => ({ type, data });

/**
 * A committed reader may lag a commit (on PostgreSQL, until older transactions anywhere in the
 * cluster finish) but never skips: reads pages until `count` events arrived, then checks nothing follows.
 */
export async function readCommitted(
  store: Store,
  count: number,
  after: Cursor = '',
  filter: { streamPrefix?: string; types?: string[] } = {},
): Promise<{ events: StoredEvent[]; cursor: Cursor }> {
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
}

/** The journal: appends, versions, idempotency, transactions, committed reads, wake-ups and streams (`conformance.ts` sets up the store). */
export function journalConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  describe('journal', () => {
    it('gives each stream gapless versions and every event a growing global position', async () => {
      const a = await h.store().eventAppend({ appends: [{ streamId: 's-1', events: [ev('A', { x: 1 }), ev('B')] }] });
      const b = await h.store().eventAppend({ appends: [{ streamId: 's-2', events: [ev('C')] }] });
      const c = await h.store().eventAppend({
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

      const stream = await h.store().eventReadStream({ streamId: 's-1' });
      expect(stream.map((e) => e.type)).toEqual(['A', 'B', 'D']);
      expect(stream[0]?.data).toEqual({ x: 1 });
      expect(stream[2]?.data).toEqual([1, 'two']);
      expect(stream[2]?.metadata).toEqual({ correlationId: 'c-1' });
      expect(stream[0]?.timestamp).toBeGreaterThan(Date.now() - 60_000);
      expect(
        (await h.store().eventReadStream({ streamId: 's-1', fromVersion: 2, limit: 1 })).map((e) => e.type),
      ).toEqual(['B']);
      expect((await h.store().eventReadStream({ streamId: 's-1', backwards: true })).map((e) => e.type)).toEqual([
        'D',
        'B',
        'A',
      ]);
      expect(
        (await h.store().eventReadStream({ streamId: 's-1', backwards: true, fromVersion: 2 })).map((e) => e.type),
      ).toEqual(['B', 'A']);
      expect(await h.store().eventReadStream({ streamId: 'nope' })).toEqual([]);
    });

    it('rejects a wrong expected version with ConflictError and writes nothing', async () => {
      await h.store().eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 0, events: [ev('Created')] }] });
      await expect(
        h.store().eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 0, events: [ev('Created')] }] }),
      ).rejects.toThrow(ConflictError);
      await expect(
        h.store().eventAppend({ appends: [{ streamId: 'order-1', expectedVersion: 5, events: [ev('X')] }] }),
      ).rejects.toThrow(/order-1 is at version 1, expected 5/);
      const ok = await h.store().eventAppend({
        appends: [{ streamId: 'order-1', expectedVersion: 1, events: [ev('Paid')] }],
      });
      expect(ok.events[0]?.version).toBe(2);
      expect((await h.store().eventReadStream({ streamId: 'order-1' })).map((e) => e.type)).toEqual([
        'Created',
        'Paid',
      ]);
    });

    it('appends to several streams atomically: one conflict writes nothing anywhere', async () => {
      await h.store().eventAppend({ appends: [{ streamId: 'b', events: [ev('B1')] }] });
      await expect(
        h.store().eventAppend({
          appends: [
            { streamId: 'a', events: [ev('A1')] },
            { streamId: 'b', expectedVersion: 0, events: [ev('B2')] },
          ],
        }),
      ).rejects.toThrow(ConflictError);
      expect(await h.store().eventReadStream({ streamId: 'a' })).toEqual([]);
      const next = await h.store().eventAppend({ appends: [{ streamId: 'a', events: [ev('A1')] }] });
      expect(next.events[0]?.version).toBe(1);
    });

    it('leaves nothing behind when a conflict is caught inside a transaction', async () => {
      await h.store().eventAppend({ appends: [{ streamId: 'c', events: [ev('C1')] }] });
      await h.store().transaction(async (tx) => {
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
      expect((await h.store().eventReadStream({ streamId: 'c' })).map((e) => [e.type, e.version])).toEqual([
        ['C1', 1],
        ['C2', 2],
      ]);
      expect(await h.store().eventReadStream({ streamId: 'd' })).toEqual([]);
      expect(
        (await h.store().eventAppend({ appends: [{ streamId: 'd', events: [ev('D1')] }] })).events[0]?.version,
      ).toBe(1);
    });

    it('lets a transaction that lost a race for a stream catch the conflict and commit the rest', async () => {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let appended!: () => void;
      const first = new Promise<void>((resolve) => (appended = resolve));
      const winner = h.store().transaction(async (tx) => {
        await tx.eventAppend({ appends: [{ streamId: 'race', expectedVersion: 0, events: [ev('Won')] }] });
        appended();
        await held;
      });
      await first;
      const loser = h.store().transaction(async (tx) => {
        const lost = tx.eventAppend({ appends: [{ streamId: 'race', expectedVersion: 0, events: [ev('Lost')] }] });
        await expect(lost).rejects.toThrow(ConflictError);
        await tx.eventAppend({ appends: [{ streamId: 'after-race', events: [ev('Next')] }] });
      });
      // the loser waits for the winner's lock (PostgreSQL: the stream's row; SQLite: the database)
      setTimeout(release, 50);
      await Promise.all([winner, loser]);
      expect((await h.store().eventReadStream({ streamId: 'race' })).map((e) => e.type)).toEqual(['Won']);
      expect((await h.store().eventReadStream({ streamId: 'after-race' })).map((e) => e.type)).toEqual(['Next']);
    });

    it('returns the original events for a repeated idempotency key and writes nothing', async () => {
      const first = await h.store().eventAppend({
        idempotencyKey: 'k-1',
        appends: [{ streamId: 'x', events: [ev('A'), ev('B')] }],
      });
      const again = await h.store().eventAppend({
        idempotencyKey: 'k-1',
        appends: [{ streamId: 'x', events: [ev('A'), ev('B')] }],
      });
      expect(first.duplicate).toBe(false);
      expect(again.duplicate).toBe(true);
      expect(again.events).toEqual(first.events);
      expect(await h.store().eventReadStream({ streamId: 'x' })).toHaveLength(2);
    });

    it('keeps one event per idempotency key under concurrent appends', async () => {
      const other = await h.openAnother();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          (i % 2 ? h.store() : other).eventAppend({
            idempotencyKey: 'same',
            appends: [{ streamId: 'y', events: [ev('Once')] }],
          }),
        ),
      );
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      expect(new Set(results.map((r) => r.events[0]?.position)).size).toBe(1);
      expect(await h.store().eventReadStream({ streamId: 'y' })).toHaveLength(1);
    });

    it('gives concurrent appenders of one stream consecutive versions', async () => {
      const other = await h.openAnother();
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? h.store() : other).eventAppend({ appends: [{ streamId: 'hot', events: [ev(`E${i}`)] }] }),
        ),
      );
      const versions = (await h.store().eventReadStream({ streamId: 'hot' })).map((e) => e.version);
      expect(versions).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    });

    it('rolls back everything written in a transaction that throws', async () => {
      await expect(
        h.store().transaction(async (tx) => {
          await tx.eventAppend({ appends: [{ streamId: 'tx', events: [ev('A')] }] });
          await tx.projectionPut({ name: 'p', key: 'k', value: 1 });
          await tx.taskEnqueue({ tasks: [task('q')] });
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      expect(await h.store().eventReadStream({ streamId: 'tx' })).toEqual([]);
      expect(await h.store().projectionGet({ name: 'p', key: 'k' })).toBeUndefined();
      expect(await h.store().taskList({ queue: 'q', limit: 10 })).toEqual([]);
    });

    it('commits an unread append with its transaction (and wakes its stream), and undoes it with it', async () => {
      const woken: string[] = [];
      const unlisten = await h.store().listen('events', (stream) => void woken.push(stream));
      await h.store().transaction(async (tx) => {
        await tx.eventAppend({ unread: true, appends: [{ streamId: 'u', events: [ev('A'), ev('B')] }] });
        await tx.eventAppend({ unread: true, appends: [{ streamId: 'u', events: [ev('C')] }] });
      });
      for (let i = 0; i < 100 && !woken.includes('u'); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      await unlisten();
      expect((await h.store().eventReadStream({ streamId: 'u' })).map((e) => [e.type, e.version])).toEqual([
        ['A', 1],
        ['B', 2],
        ['C', 3],
      ]);
      expect(woken).toContain('u');
      const undone = h.store().transaction(async (tx) => {
        await tx.eventAppend({ unread: true, appends: [{ streamId: 'u', events: [ev('D')] }] });
        await tx.projectionPut({ name: 'p', key: 'k', value: 1 });
        throw new Error('boom');
      });
      await expect(undone).rejects.toThrow('boom');
      expect(await h.store().eventReadStream({ streamId: 'u' })).toHaveLength(3);
    });

    it('calls back after a commit, never after a rollback, and at once outside a transaction; rollback callbacks the other way round', async () => {
      const calls: string[] = [];
      h.store().onCommit(() => calls.push('outside'));
      h.store().onRollback(() => calls.push('rollback outside'));
      await h.store().transaction(async (tx) => {
        tx.onCommit(() => calls.push('committed'));
        tx.onRollback(() => calls.push('rollback of a commit'));
        await tx.transaction(async (inner) => inner.onCommit(() => calls.push('nested')));
        expect(calls).toEqual(['outside']);
      });
      await expect(
        h.store().transaction(async (tx) => {
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
      expect(await h.store().eventHead()).toBe('');
      for (let i = 0; i < 5; i++)
        await h.store().eventAppend({ appends: [{ streamId: `r-${i % 2}`, events: [ev(`E${i}`)] }] });
      const first = await readCommitted(h.store(), 5);
      expect(first.events.map((e) => e.type)).toEqual(['E0', 'E1', 'E2', 'E3', 'E4']);
      expect(await h.store().eventHead()).toBe(first.cursor);
      await h.store().eventAppend({ appends: [{ streamId: 'r-9', events: [ev('E5')] }] });
      expect((await readCommitted(h.store(), 1, first.cursor)).events.map((e) => e.type)).toEqual(['E5']);
      const filtered = await readCommitted(h.store(), 1, '', { streamPrefix: 'r-1', types: ['E3'] });
      expect(filtered.events.map((e) => e.type)).toEqual(['E3']);
    });

    it('never lets a reader skip an event whose transaction commits after a later position', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let appendedA!: () => void;
      const aAppended = new Promise<void>((resolve) => (appendedA = resolve));
      const other = await h.openAnother();
      const slow = h.store().transaction(async (tx) => {
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
      const after = await readCommitted(h.store(), 2 - seenDuring.length, (await during).cursor);
      expect([...seenDuring, ...after.events].map((e) => e.type).sort()).toEqual(['A', 'B']);
    });
  });

  it('wakes listeners after an append with the stream and the version it reached, whatever another listener throws', async () => {
    const woken: [string, number | undefined][] = [];
    const failing = await h.store().listen('events', () => {
      throw new Error('a listener that fails');
    });
    const stop = await h.store().listen('events', (stream, version) => woken.push([stream, version]));
    await h.store().eventAppend({
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
    await h.store().transaction(async (tx) => {
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
    await h.store().eventAppend({
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
    await h.store().eventAppend({ appends: [{ streamId: 'channel:a', events: [{ type: 'm', data: 1 }] }] });
    await h.store().eventAppend({ appends: [{ streamId: 'channelx', events: [{ type: 'm', data: 1 }] }] });
    const all = await h.store().streamList({ prefix: 'channel:', limit: 10 });
    expect(all.map((s) => [s.streamId, s.version])).toEqual([
      ['channel:a', 1],
      ['channel:b', 2],
    ]);
    const [last] = await h.store().eventReadStream({ streamId: 'channel:b', backwards: true, limit: 1 });
    expect(all[1]!.updatedAt).toBe(last!.timestamp);
    expect(
      (await h.store().streamList({ prefix: 'channel:', after: 'channel:a', limit: 10 })).map((s) => s.streamId),
    ).toEqual(['channel:b']);
    expect(await h.store().streamList({ prefix: 'channel:', limit: 1 })).toHaveLength(1);
  });
}
