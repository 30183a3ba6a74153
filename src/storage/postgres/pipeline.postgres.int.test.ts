import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../../testing/databases.js';
import { newId } from '../../ids.js';
import type { NewTask, Store } from '../store.js';
import { PIPELINED } from './enqueue.js';
import { openPostgresStore } from './store.js';

/** jsonb refuses the NUL escape: a write that fails in the server, after the client sent it. */
const REFUSED = { key: 'bad', value: 'a\u0000b' };

const task = (payload: unknown, idempotencyKey: string | null = null): NewTask => ({
  id: newId('task'),
  queue: 'q',
  payload,
  idempotencyKey,
  orderingKey: null,
  runAt: null,
  priority: 0,
  maxAttempts: 3,
  tag: null,
});

/** The text of each statement sent while `fn` runs, as it is sent (`fn` may look at the list). */
async function recorded(fn: (sent: string[]) => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as string | { text?: string };
    sent.push(typeof config === 'string' ? config : (config.text ?? ''));
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pg.Client.prototype.query;
  try {
    await fn(sent);
  } finally {
    pg.Client.prototype.query = query;
  }
  return sent;
}

/**
 * A transaction's writes are sent without waiting for their answers (the connection pipelines):
 * a write that fails must still fail its transaction, be the error its caller sees, and leave
 * the connection usable.
 */
describe('pipelined transactions on postgres', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openPostgresStore(await createPostgresDatabase(), { poolSize: 1 });
  });
  afterEach(async () => {
    await store.close();
  });

  it('fails the transaction when a write fails just before the COMMIT, and commits nothing of it', async () => {
    const attempt = store.transaction(async (tx) => {
      await tx.projectionPutMany({ name: 'p', rows: [{ key: 'good', value: 1 }] });
      await tx.projectionPutMany({ name: 'p', rows: [REFUSED] });
    });
    await expect(attempt).rejects.toThrow(/unicode|\\u0000/i);
    expect(await store.projectionGet({ name: 'p', key: 'good' })).toBeUndefined();
  });

  it("reports a failed write as the next statement's error, not as the aborted transaction it left", async () => {
    const attempt = store.transaction(async (tx) => {
      await tx.projectionPutMany({ name: 'p', rows: [REFUSED] });
      await tx.projectionGet({ name: 'p', key: 'good' });
    });
    const error = await attempt.catch((e: Error) => e);
    expect(String(error)).toMatch(/unicode|\\u0000/i);
    expect(String(error)).not.toMatch(/current transaction is aborted/);
  });

  it('runs the next transaction on the same connection, its prepared statements intact', async () => {
    for (let i = 0; i < 3; i++) {
      await expect(store.transaction((tx) => tx.projectionPutMany({ name: 'p', rows: [REFUSED] }))).rejects.toThrow();
      await store.transaction(async (tx) => {
        await tx.projectionPutMany({ name: 'p', rows: [{ key: `k${i}`, value: i }] });
        expect(await tx.projectionGet({ name: 'p', key: `k${i}` })).toBe(i);
      });
    }
    expect(await store.projectionGetMany({ name: 'p', keys: ['k0', 'k1', 'k2'] })).toHaveLength(3);
  });

  it("sends a transaction's projection writes, whatever their projections, as one statement ahead of its next one", async () => {
    const sent = await recorded((sent) =>
      store.transaction(async (tx) => {
        await tx.projectionPut({ name: 'a', key: 'k', value: 1 });
        await tx.projectionPutMany({ name: 'b', rows: [{ key: 'k', value: 2 }] });
        await tx.projectionPut({ name: 'a', key: 'k', value: 3 });
        expect(sent).toEqual([]);
        expect(await tx.projectionGet({ name: 'a', key: 'k' })).toBe(3);
        await tx.projectionPut({ name: 'c', key: 'k', value: 4 });
      }),
    );
    const puts = sent.filter((text) => text.startsWith('INSERT INTO projections'));
    // the three rows before the read, then the last one with the COMMIT
    expect(sent.map((text) => (text.startsWith('INSERT') ? 'put' : text.split(' ')[0]))).toEqual([
      'BEGIN',
      'put',
      'SELECT',
      'put',
      'COMMIT',
    ]);
    expect(puts).toHaveLength(2);
    expect(await store.projectionGetMany({ name: 'b', keys: ['k'] })).toEqual([{ key: 'k', value: 2 }]);
    expect(await store.projectionGet({ name: 'a', key: 'k' })).toBe(3);
    expect(await store.projectionGet({ name: 'c', key: 'k' })).toBe(4);
  });

  it('answers statements sent at once in one transaction each with its own rows', async () => {
    await store.transaction(async (tx) => {
      await tx.projectionPutMany({
        name: 'p',
        rows: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: i })),
      });
      const values = await Promise.all(
        Array.from({ length: 20 }, (_, i) => tx.projectionGet({ name: 'p', key: `k${i}` })),
      );
      expect(values).toEqual(Array.from({ length: 20 }, (_, i) => i));
    });
  });

  it('enqueues a big batch as pipelined statements in one transaction, in input order, keys shared across them', async () => {
    const tasks = Array.from({ length: 2 * PIPELINED + 500 }, (_, i) =>
      task({ i }, i === 10 || i === PIPELINED + 10 ? 'same' : null),
    );
    let results: Awaited<ReturnType<Store['taskEnqueue']>> = [];
    const sent = await recorded(async () => (results = await store.taskEnqueue({ tasks })));
    const kinds = sent.map((text) => (text.includes('INSERT INTO tasks') ? 'enqueue' : text.split(/\s/)[0]!));
    expect(kinds.filter((s) => s !== 'SELECT')).toEqual(['BEGIN', 'enqueue', 'enqueue', 'enqueue', 'COMMIT']);
    expect(results.filter((r) => r.created)).toHaveLength(tasks.length - 1);
    expect(results[PIPELINED + 10]).toMatchObject({ created: false, task: { id: tasks[10]!.id } });
    // one task.enqueued for each task inserted
    expect((await store.status()).events).toBe(tasks.length - 1);
    const claimed = await store.taskClaim({
      queue: 'q',
      limit: tasks.length,
      leaseMs: 60_000,
      workerId: 'w',
      leaseToken: 't',
    });
    expect(claimed.map((t) => t.payload)).toEqual(tasks.filter((_, i) => i !== PIPELINED + 10).map((t) => t.payload));
  });

  it('writes nothing of a big enqueue when the server refuses a task of its last statement', async () => {
    const tasks = Array.from({ length: 2 * PIPELINED + 500 }, (_, i) =>
      task(i === 2 * PIPELINED + 400 ? REFUSED : { i }),
    );
    await expect(store.taskEnqueue({ tasks })).rejects.toThrow(/unicode|\\u0000/i);
    const status = await store.status();
    expect(Object.values(status.tasks).reduce((a, b) => a + b, 0)).toBe(0);
    expect(status.events).toBe(0);
    // the connection (the pool's only one) goes on
    expect(await store.taskEnqueue({ tasks: [task(1)] })).toHaveLength(1);
  });
});
