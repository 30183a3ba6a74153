import Database from 'better-sqlite3';
import { loadMigrations } from '../migrations.js';
import { BUSY_TIMEOUT_MS } from './busy.js';

export type Db = Database.Database;

/**
 * Opens the file in WAL mode and applies pending migrations. Two processes opening the same file
 * at once are safe: migrations run under `BEGIN IMMEDIATE`, so the second waits and then finds
 * nothing left to apply. Opening waits up to 10 s for a lock held elsewhere, synchronously (it is
 * start-up: nothing is served yet); afterwards SQLite waits BUSY_TIMEOUT_MS per try and the store
 * does the rest of the waiting without holding the event loop (busy.ts).
 */
export function openDatabase(path: string, options: { migrate?: boolean } = {}): Db {
  const db = new Database(path);
  // Takes effect on a new file only (an existing one keeps its mode until a VACUUM): pages that
  // retention frees go back to the file system through storageVacuum, so the file stays bounded.
  db.pragma('auto_vacuum = INCREMENTAL');
  db.pragma('journal_mode = WAL');
  // NORMAL in WAL mode: a commit is durable once the WAL is synced at checkpoint; a process crash
  // (the failure we test) loses nothing, only a power loss can drop the last commits.
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 10000');
  db.pragma('foreign_keys = ON');
  // `runledger doctor` looks without changing anything: it reports pending migrations instead
  if (options.migrate !== false) migrate(db);
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  return db;
}

function migrate(db: Db): void {
  const apply = db.transaction(() => {
    db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)',
    );
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    for (const migration of loadMigrations('sqlite')) {
      if (applied.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
    }
  });
  apply.immediate();
}

/** Prepared statements, compiled once per connection. */
export class Statements {
  private readonly cache = new Map<string, Database.Statement>();
  constructor(readonly db: Db) {}

  get(sql: string): Database.Statement {
    let statement = this.cache.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.cache.set(sql, statement);
    }
    return statement;
  }
}
