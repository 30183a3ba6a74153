import Database from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../errors.js';
import { createSqlitePath } from '../../testing/databases.js';
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

/** The longest the event loop went without running a 5 ms timer, while `work` ran. */
async function longestStall<T>(work: Promise<T>): Promise<{ stallMs: number; settled: PromiseSettledResult<T> }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  const [settled] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { stallMs: Math.max(stallMs, performance.now() - last), settled: settled! };
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
    setTimeout(() => lock.release(), 1000);
    const started = performance.now();
    const write = put(store, 'after');
    expect(await store.projectionGet({ name: 'p', key: 'warm-7' })).toEqual({ key: 'warm-7' });
    expect(performance.now() - started).toBeLessThan(250);
    const { stallMs, settled } = await longestStall(write);
    expect(settled.status).toBe('fulfilled');
    expect(performance.now() - started).toBeGreaterThanOrEqual(990);
    // BUSY_TIMEOUT_MS (5) per try, with room for a loaded machine; it was the whole second before
    expect(stallMs).toBeLessThan(250);
    expect(await store.projectionGet({ name: 'p', key: 'after' })).toEqual({ key: 'after' });
  });

  it('refuses a write as busy after BUSY_DEADLINE_MS, the writes lined up behind it and those that come later at once, writing none of them', async () => {
    const path = createSqlitePath();
    store = openSqliteStore(path);
    const lock = holdLock(path);
    open.push(lock);
    const s = store;
    const started = performance.now();
    const writes = Promise.allSettled([...Array.from({ length: 20 }, (_, i) => put(s, `refused-${i}`)), s.transaction(async (tx) => put(tx, 'in-tx')), s.storageVacuum({ after: 'sweep' })]);
    const { stallMs, settled } = await longestStall(writes);
    const elapsed = performance.now() - started;
    const outcomes = settled.status === 'fulfilled' ? settled.value : [];
    expect(outcomes).toHaveLength(22);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const error = (outcome as PromiseRejectedResult).reason;
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(error).toMatchObject({ reason: 'busy', retryAfterSeconds: 1 });
    }
    // one wait for all: not one each
    expect(elapsed).toBeGreaterThanOrEqual(BUSY_DEADLINE_MS - 10);
    expect(elapsed).toBeLessThan(BUSY_DEADLINE_MS + 500);
    expect(stallMs).toBeLessThan(250);
    // the lock held past the deadline already: a write that comes now gets one try, not a wait of its own
    const late = performance.now();
    await expect(put(s, 'late')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(performance.now() - late).toBeLessThan(250);
    lock.release();
    await put(s, 'after');
    const keys = (await s.projectionList({ name: 'p', limit: 100 })).map((row) => row.key);
    expect(keys).toEqual(['after']);
  });

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
