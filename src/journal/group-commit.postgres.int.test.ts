import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import { createPostgresDatabase } from '../testing/databases.js';
import { Journal } from './journal.js';

/**
 * The connection of a batch dies in the middle of its transaction (pg_terminate_backend from
 * another session, the batch's session as the server sees it): no caller may be told "done" for a
 * write that did not commit, and each caller told "done" finds its write there.
 */
describe('group commit on postgres, its connection killed mid-batch', () => {
  let url: string;
  let store: Store;
  let journal: Journal;
  let admin: pg.Client;
  beforeEach(async () => {
    url = await createPostgresDatabase();
    store = await openStore(url);
    journal = new Journal(store, { maxEventBytes: 1 << 20, maxEventsPerAppend: 1000 });
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  afterEach(async () => {
    await admin.end();
    await store.close();
  });

  /** Kills every session of this database that sits in an open transaction (the batch's), and waits until it is gone. */
  async function killBatchConnection(): Promise<void> {
    const { rows } = await admin.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'",
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const { pid } of rows) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    for (;;) {
      const alive = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = ANY($1::int[])', [
        rows.map((r) => r.pid),
      ]);
      if (alive.rowCount === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async function outcomes(
    killerAt: number,
    count: number,
  ): Promise<Array<{ stream: string; done: boolean; stored: number }>> {
    const writes = Array.from({ length: count }, (_, i) =>
      journal.group.submit({
        appends: [{ streamId: `run:${i}`, events: [{ type: 'x', data: i }] }],
        // statements of each write's own inside the transaction, after the appends: its row (held
        // until the transaction's next statement), then a read of it, which sends both
        also: async (tx: Store) => {
          if (i === killerAt) await killBatchConnection();
          await tx.projectionPut({ name: 'p', key: String(i), value: i });
          expect(await tx.projectionGet({ name: 'p', key: String(i) })).toBe(i);
        },
      }),
    );
    const settled = await Promise.allSettled(writes);
    return Promise.all(
      settled.map(async (s, i) => {
        const stored = (await store.eventReadStream({ streamId: `run:${i}` })).length;
        // all of a write or nothing of it
        expect(await store.projectionGet({ name: 'p', key: String(i) })).toEqual(stored === 1 ? i : undefined);
        return { stream: `run:${i}`, done: s.status === 'fulfilled', stored };
      }),
    );
  }

  it('before the commit: no caller is told "done" without its write; the others commit when tried alone', async () => {
    const results = await outcomes(2, 6);
    for (const r of results) expect(r.stored).toBe(r.done ? 1 : 0);
    // the write that kills its connection never commits; every other one was tried again alone
    expect(results.filter((r) => !r.done).map((r) => r.stream)).toEqual(['run:2']);
  });

  it('as the last write: its own statement fails, and the batch is tried again write by write', async () => {
    const results = await outcomes(5, 6);
    for (const r of results) expect(r.stored).toBe(r.done ? 1 : 0);
    expect(results.filter((r) => !r.done).map((r) => r.stream)).toEqual(['run:5']);
  });

  it('at the commit itself: whether it took effect is unknown, so every caller of the batch is told it failed', async () => {
    const writes = Array.from({ length: 4 }, (_, i) =>
      journal.group.submit({
        appends: [{ streamId: `run:${i}`, events: [{ type: 'x', data: i }] }],
        ...(i === 3 ? { also: () => killBatchConnection() } : {}),
      }),
    );
    const settled = await Promise.allSettled(writes);
    const results = await Promise.all(
      settled.map(async (s, i) => ({
        done: s.status === 'fulfilled',
        stored: (await store.eventReadStream({ streamId: `run:${i}` })).length,
      })),
    );
    for (const r of results) expect(r.stored).toBe(r.done ? 1 : 0);
    expect(results.every((r) => !r.done)).toBe(true);
  });

  it('goes on committing on a fresh connection afterwards', async () => {
    await outcomes(0, 3);
    const after = await journal.group.submit({
      appends: [{ streamId: 'run:after', events: [{ type: 'x', data: 1 }] }],
    });
    expect(after.events).toHaveLength(1);
  });

  it('commits a batch that claims tasks durably: a claim shares its transaction with completions and run steps', async () => {
    await store.taskEnqueue({
      tasks: [
        {
          id: 't1',
          queue: 'q',
          payload: null,
          idempotencyKey: null,
          orderingKey: null,
          runAt: null,
          priority: 0,
          maxAttempts: 3,
        },
      ],
    });
    const setting = (tx: Store) =>
      (tx as unknown as { db: { rows: (sql: string) => Promise<Array<{ s: string }>> } }).db.rows(
        "SELECT current_setting('synchronous_commit') AS s",
      );
    const { value } = await journal.group.submit({
      appends: [{ streamId: 'run:durable', events: [{ type: 'x', data: null }] }],
      prepare: async (tx) => {
        await tx.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L' });
        return { appends: [], value: null };
      },
      also: async (tx) => (await setting(tx))[0]!.s,
    });
    expect(value).toBe('on');
  });
});
