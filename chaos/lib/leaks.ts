import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findLeaks, grepSecrets, type Haystack } from '../secret-grep.js';

const PG_DUMP = '/usr/lib/postgresql/15/bin/pg_dump';

/**
 * How many times a planted secret appears, in any of the forms `secretVariants` lists (as it is,
 * upper/lower-cased, JSON-escaped, percent-encoded, HTML-escaped, base64 at every alignment), in:
 * the scenario's logs and files (a SQLite database with its WAL), a `pg_dump` of a PostgreSQL
 * database, and `texts` (API answers).
 */
export function countLeaks(
  secret: string,
  where: { dir: string; databases: string[]; texts?: string[] },
): { count: number; places: string[] } {
  const files: Haystack[] = readdirSync(where.dir)
    .filter((file) => /\.(log|db|db-wal|db-shm)$/.test(file))
    .map((file) => ({ where: file, content: readFileSync(join(where.dir, file)) }));
  const texts = (where.texts ?? []).map((text, i) => ({ where: `response ${i}`, content: text }));
  const leaks = findLeaks([...files, ...texts], [secret]);
  for (const db of where.databases) {
    if (db.startsWith('postgres')) leaks.push(...grepSecrets({ postgres: db, pgDump: PG_DUMP }, [secret]));
    // a database outside the scenario's folder (a tmpfs): its file and WAL
    else if (existsSync(db) && !db.startsWith(where.dir)) leaks.push(...grepSecrets({ sqlite: db }, [secret]));
  }
  const places = [...new Set(leaks.map((leak) => `${leak.where} (${leak.form}: …${leak.context.slice(20, 80)}…)`))];
  return { count: leaks.length, places };
}
