import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPostgresDatabase } from '../../testing/databases.js';
import { openStore } from '../open.js';
import type { Store } from '../store.js';

/** Appends made at once outside a transaction go in one statement (rl_event_append_each). */
describe('appends made at once on postgres', () => {
  let store: Store;
  let admin: pg.Client;
  beforeEach(async () => {
    const url = await createPostgresDatabase();
    store = await openStore(url);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });
  afterEach(async () => {
    await admin.end();
    await store.close();
  });

  const append = (stream: string, data: unknown = null) =>
    store.eventAppend({ appends: [{ streamId: stream, events: [{ type: 'x', data }] }] });
  const stored = async (stream: string) => (await store.eventReadStream({ streamId: stream })).length;

  it('commit together: fewer transactions than appends', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => append(`together-${i % 4}`, i)));
    const { rows } = await admin.query<{ n: string }>(
      "SELECT count(DISTINCT tx_id) AS n FROM events WHERE stream_id LIKE 'together-%'",
    );
    expect(Number(rows[0]!.n)).toBeLessThan(20);
  });

  it('a statement the server refuses fails only the append that made it fail: the others go again alone', async () => {
    // jsonb takes no U+0000 (the journal checks for it first; the store does not)
    const settled = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => append(`refused-${i}`, i === 3 ? { text: 'a\u0000b' } : i)),
    );
    expect(settled.map((s) => s.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect((settled[3] as PromiseRejectedResult).reason).toBeInstanceOf(pg.DatabaseError);
    expect(await Promise.all(Array.from({ length: 6 }, (_, i) => stored(`refused-${i}`)))).toEqual([1, 1, 1, 0, 1, 1]);
  });

  it('its connection killed mid-statement: every caller of the batch is told it failed, and nothing of it was written', async () => {
    await append('held');
    await admin.query('BEGIN');
    await admin.query("SELECT 1 FROM streams WHERE stream_id = 'held' FOR UPDATE");
    // the first goes alone at once (nothing is in flight); the rest in one batch with it in flight
    // settled from the start: they fail as the session ends, maybe before the terminate's own answer is back
    const appends = Promise.allSettled(
      Array.from({ length: 5 }, (_, i) => append(i === 1 ? 'held' : `killed-${i}`, i)),
    );
    // the batch's statement waits for the row lock: end its session there
    let pid: number | undefined;
    while (pid === undefined) {
      // inside a transaction, pg_stat_activity answers from one snapshot unless it is cleared
      await admin.query('SELECT pg_stat_clear_snapshot()');
      const { rows } = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%rl_event_append_each%'",
      );
      pid = rows[0]?.pid;
    }
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const settled = await appends;
    await admin.query('ROLLBACK');
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected', 'rejected']);
    expect(await Promise.all(['killed-0', 'held', 'killed-2', 'killed-3', 'killed-4'].map(stored))).toEqual([
      1, 1, 0, 0, 0,
    ]);
    // the pool goes on with new connections
    await append('killed-2');
    expect(await stored('killed-2')).toBe(1);
  });
});
