import { readdirSync, readFileSync } from 'node:fs';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * The numbered migrations of one dialect (`001_init.sql`, `002_….sql`), in order. They are read
 * from the source tree, which ships with the package, so `dist/` and `src/` find the same files.
 */
export function loadMigrations(dialect: 'sqlite' | 'postgres'): Migration[] {
  const dir = new URL(`../../src/storage/${dialect}/migrations/`, import.meta.url);
  return readdirSync(dir)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(new URL(file, dir), 'utf8'),
    }));
}
