import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * How many times a planted secret appears as it is or JSON-escaped in: the scenario's logs and
 * files (a SQLite database with its WAL), a `pg_dump` of a PostgreSQL database, and `texts`
 * (API answers). The every-encoding grep is `chaos/secret-grep.ts`'s job; this is the floor.
 */
export function countLeaks(secret: string, where: { dir: string; databases: string[]; texts?: string[] }): { count: number; places: string[] } {
  const forms = [...new Set([secret, JSON.stringify(secret).slice(1, -1)])].map((f) => Buffer.from(f));
  const places: string[] = [];
  let count = 0;
  const scan = (name: string, data: Buffer) => {
    for (const form of forms) {
      for (let at = data.indexOf(form); at >= 0; at = data.indexOf(form, at + 1)) {
        count += 1;
        if (!places.includes(name)) places.push(name);
      }
    }
  };
  for (const file of readdirSync(where.dir)) if (/\.(log|db|db-wal)$/.test(file)) scan(file, readFileSync(join(where.dir, file)));
  for (const db of where.databases) {
    if (db.startsWith('postgres')) scan('pg_dump', execFileSync('/usr/lib/postgresql/15/bin/pg_dump', ['--data-only', db], { maxBuffer: 1 << 30 }));
    else for (const f of [db, `${db}-wal`]) if (existsSync(f) && !f.startsWith(where.dir)) scan(f, readFileSync(f));
  }
  (where.texts ?? []).forEach((text, i) => { scan(`response ${i}`, Buffer.from(text)); });
  return { count, places };
}
