import Database from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../errors.js';
import { createSqlitePath } from '../../testing/databases.js';
import { Journal } from '../../journal/journal.js';
import type { Store } from '../store.js';
import { BUSY_DEADLINE_MS } from './busy.js';
import { openSqliteStore } from './store.js';

// The lock is held by a second connection of this process: like another process's, SQLite's
// lock is per connection, and the store never waits for it with the event loop held, so the
// timer that releases it fires. (e2e/sqlite-lock.sqlite.int.test.ts holds it from another process.)

/** Takes the file's write lock on a connection of its own; `release` commits. */
function holdLock(path: string): { release: () => void } {
  const db = new Database(path);
  db.exec('BEGIN EXCLUSIVE');
  return {
    release: () => {
      if (db.inTransaction) db.exec('COMMIT');
      db.close();
    },
  };
}

/**
 * How often a 5 ms timer ran while `work` did: hundreds in a second when the event loop is free,
 * none while SQLite's busy wait holds it. Counted, not timed: a loaded machine may stall a process
 * for a moment (1.4 s was seen), but not for most of a second's ticks.
 */
async function ticksDuring<T>(work: Promise<T>): Promise<{ ticks: number; settled: PromiseSettledResult<T> }> {
  let ticks = 0;
  const timer = setInterval(() => (ticks += 1), 5);
  const [settled] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { ticks, settled: settled! };
}

const put = (store: Store, key: string) => store.projectionPut({ name: 'p', key, value: { key } });

describe('sqlite writes while another connection holds the write lock', () => {
  const open: Array<{ release: () => void }> = [];
  let store: Store | undefined;
  afterEach(async () => {
    for (const lock of open.splice(0)) lock.release();
    await store?.close();
  });

  it('waits without holding the event loop, answers reads meanwhile, and commits once the lock is released', async () => {
    const path = createSqlitePath();
    store = openSqliteStore(path);
    // past 1,000 commits: the checkpointer's thread runs too, and must not hold anything up either
    for (let i = 0; i < 1100; i++) await put(store, `warm-${i}`);
    const lock = holdLock(path);
    open.push(lock);
    // released by a timer of this process: it fires only if the waiting write leaves the event loop free
    setTimeout(() => lock.release(), 1000);
    const started = performance.now();
    let written = false;
    const write = put(store, 'after').then(() => (written = true));
    expect(await store.projectionGet({ name: 'p', key: 'warm-7' })).toEqual({ key: 'warm-7' });
    expect(written, 'the read answered while the write waited').toBe(false);
    const { ticks, settled } = await ticksDuring(write);
    expect(settled.status).toBe('fulfilled');
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    expect(ticks).toBeGreaterThan(20);
    expect(await store.projectionGet({ name: 'p', key: 'after' })).toEqual({ key: 'after' });
  });

  it('refuses a write as busy after BUSY_DEADLINE_MS, and the writes lined up behind it with it, writing none of them', async () => {
    const path = createSqlitePath();
    store = openSqliteStore(path);
    const lock = holdLock(path);
    open.push(lock);
    const s = store;
    const started = performance.now();
    const writes = Promise.allSettled([
      ...Array.from({ length: 20 }, (_, i) => put(s, `refused-${i}`)),
      s.transaction(async (tx) => put(tx, 'in-tx')),
      s.storageVacuum({ after: 'sweep' }),
    ]);
    const { ticks, settled } = await ticksDuring(writes);
    const elapsed = performance.now() - started;
    const outcomes = settled.status === 'fulfilled' ? settled.value : [];
    expect(outcomes).toHaveLength(22);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const error = (outcome as PromiseRejectedResult).reason;
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ reason: 'busy', retryAfterSeconds: 1 });
    }
    // one wait for all, not one each (refused when the next pause, 50 ms at most, would pass the deadline)
    expect(elapsed).toBeGreaterThanOrEqual(BUSY_DEADLINE_MS - 100);
    expect(elapsed).toBeLessThan(2 * BUSY_DEADLINE_MS);
    expect(ticks).toBeGreaterThan(20);
    lock.release();
    await put(s, 'after');
    const keys = (await s.projectionList({ name: 'p', limit: 100 })).map((row) => row.key);
    expect(keys).toEqual(['after']);
  });

  it("refuses a group commit's batch as busy once for all its writes, not once per write tried alone after it", async () => {
    const path = createSqlitePath();
    store = openSqliteStore(path);
    const journal = new Journal(store, { maxEventBytes: 1000, maxEventsPerAppend: 1000 });
    const lock = holdLock(path);
    open.push(lock);
    const started = performance.now();
    // submitted in one turn: one batch
    const writes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        journal.group.submit({ appends: [{ streamId: `s-${i}`, events: [{ type: 'x', data: i }] }] }),
      ),
    );
    const elapsed = performance.now() - started;
    for (const outcome of writes)
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    expect(elapsed).toBeGreaterThanOrEqual(BUSY_DEADLINE_MS - 100);
    expect(elapsed).toBeLessThan(2 * BUSY_DEADLINE_MS);
    lock.release();
    expect(await store.eventReadAll({ limit: 100 })).toEqual([]);
  }, 60_000);

  it('gives a write that meets a new lock after a quiet spell its whole wait, not what was left of the last lock', async () => {
    const path = createSqlitePath();
    store = openSqliteStore(path);
    const first = holdLock(path);
    open.push(first);
    await expect(put(store, 'refused')).rejects.toBeInstanceOf(StoreUnavailableError);
    first.release();
    await sleep(300);
    const second = holdLock(path);
    open.push(second);
    setTimeout(() => second.release(), 500);
    const started = performance.now();
    await put(store, 'waited');
    expect(performance.now() - started).toBeGreaterThanOrEqual(490);
    expect(await store.projectionGet({ name: 'p', key: 'waited' })).toEqual({ key: 'waited' });
  });
});
