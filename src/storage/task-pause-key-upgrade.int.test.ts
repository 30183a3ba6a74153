import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { backends, type Backend } from '../testing/backends.js';
import { loadMigrations } from './migrations.js';
import { openStore } from './open.js';
import type { NewTask, Store } from './store.js';

/** The migration of each backend that gives tasks their pause key (a stored workflow's id, issue 47). */
const PAUSE_KEY = { sqlite: 250, postgres: 310 };

/**
 * A database migrated only up to before PAUSE_KEY, holding a ready pass of `runledger.stored@1` (enqueued by the
 * version before: no pause key) while that workflow is paused.
 */
async function earlierDatabase(backend: Backend): Promise<string> {
  const location = await backend.create();
  const earlier = loadMigrations(backend.name).filter((m) => m.version < PAUSE_KEY[backend.name]);
  const now = Date.now();
  const rows = [
    `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
    ...earlier.flatMap((m) => [
      m.sql,
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, '${m.name}', ${now})`,
    ]),
    `INSERT INTO tasks (id, queue, state, payload, run_at, priority, attempts, max_attempts, created_at, updated_at, tag)
       VALUES ('old', 'q', 'ready', '{}', ${now - 1000}, 0, 0, 3, ${now}, ${now}, 'runledger.stored@1')`,
    `INSERT INTO pauses (kind, name, paused_by, reason, created_at) VALUES ('workflow', 'runledger.stored', 'ops', 'all', ${now})`,
  ];
  if (backend.name === 'sqlite') {
    const db = new Database(location);
    db.pragma('journal_mode = WAL');
    for (const sql of rows) db.exec(sql);
    db.close();
  } else {
    const client = new pg.Client({ connectionString: location });
    await client.connect();
    for (const sql of rows) await client.query(sql);
    await client.end();
  }
  return location;
}

const newTask = (id: string, pauseKey: string | null): NewTask => ({
  id,
  queue: 'q',
  payload: null,
  idempotencyKey: null,
  orderingKey: null,
  runAt: null,
  priority: 0,
  maxAttempts: 3,
  tag: 'runledger.stored@1',
  pauseKey,
});

const claim = async (store: Store, token: string) =>
  (await store.taskClaim({ queue: 'q', limit: 10, leaseMs: 60_000, workerId: 'w', leaseToken: token })).map(
    (t) => t.id,
  );

describe.each(backends)('a database from before tasks had a pause key, on $name', (backend) => {
  it('keeps its pause by workflow name; then a pause of a pause key holds only the tasks that carry it', async () => {
    const store = await openStore(await earlierDatabase(backend));
    try {
      await store.taskEnqueue({ tasks: [newTask('a', 'wf_a'), newTask('b', 'wf_b')] });
      // the pause of runledger.stored, made before the upgrade, holds its old pass and the new ones alike
      expect(await claim(store, 'L1')).toEqual([]);
      await store.pauseSet({ kind: 'workflow', name: 'wf_a', pausedBy: 'ops', reason: 'one' });
      await store.pauseDelete({ kind: 'workflow', name: 'runledger.stored' });
      expect((await claim(store, 'L2')).sort()).toEqual(['b', 'old']);
      await store.pauseDelete({ kind: 'workflow', name: 'wf_a' });
      expect(await claim(store, 'L3')).toEqual(['a']);
    } finally {
      await store.close();
    }
  });
});
