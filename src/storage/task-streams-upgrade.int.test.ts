import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { backends, type Backend } from '../testing/backends.js';
import { loadMigrations } from './migrations.js';
import { openStore } from './open.js';

/** The first migration of each backend after which a task's stream has no `streams` row. */
const TASK_STREAMS = { sqlite: 120, postgres: 160 };

/**
 * A claimed task as the version before TASK_STREAMS left it: its row, its stream's row at version
 * 1 and its `task.enqueued`, in a database migrated only that far.
 */
async function earlierDatabase(backend: Backend): Promise<string> {
  const location = await backend.create();
  const earlier = loadMigrations(backend.name).filter((m) => m.version < TASK_STREAMS[backend.name]);
  const now = Date.now();
  const rows = [
    `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
    ...earlier.flatMap((m) => [
      m.sql,
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, '${m.name}', ${now})`,
    ]),
    `INSERT INTO tasks (id, queue, state, payload, run_at, priority, attempts, max_attempts, lease_token, lease_expires_at, worker_id, created_at, updated_at, claimed_at)
       VALUES ('t1', 'q', 'running', '{}', ${now}, 0, 1, 3, 'a', ${now + 60_000}, 'w', ${now}, ${now}, ${now})`,
    `INSERT INTO streams (stream_id, version) VALUES ('task:t1', 1)`,
    `INSERT INTO events (stream_id, version, type, data, metadata, created_at) VALUES ('task:t1', 1, 'task.enqueued', '{}', '{}', ${now})`,
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

describe.each(backends)('a database from before task streams lost their rows, on $name', (backend) => {
  it("goes on with its tasks' versions: the rows are gone, and a task in flight completes at its next version", async () => {
    const store = await openStore(await earlierDatabase(backend));
    try {
      expect(await store.streamList({ prefix: 'task:', limit: 10 })).toEqual([]);
      expect(
        (await store.taskComplete({ items: [{ id: 't1', leaseToken: 'a', result: null }] })).map((t) => t.id),
      ).toEqual(['t1']);
      expect((await store.eventReadStream({ streamId: 'task:t1' })).map((e) => [e.version, e.type])).toEqual([
        [1, 'task.enqueued'],
        [2, 'task.completed'],
      ]);
    } finally {
      await store.close();
    }
  });
});
