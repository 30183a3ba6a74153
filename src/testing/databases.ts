import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { randomBytes } from 'node:crypto';

/**
 * Where test databases are created: `RUNLEDGER_TEST_PG_URL`, else the local server with trust auth.
 * Each call makes a fresh database; databases of earlier runs are dropped by the test setup, so the
 * state of a failed test stays for inspection until the next run.
 */
export function testAdminUrl(): string {
  return process.env.RUNLEDGER_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

export const TEST_DB_PREFIX = 'rl_test_';

/** A fresh, empty PostgreSQL database; returns its URL. */
export async function createPostgresDatabase(): Promise<string> {
  const name = `${TEST_DB_PREFIX}${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: testAdminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(testAdminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Drops the test databases that earlier runs left more than `olderThanMs` ago (their names carry
 * their creation time), so a test run started meanwhile elsewhere keeps its own.
 */
export async function dropPostgresTestDatabases(olderThanMs = 30 * 60_000): Promise<number> {
  const admin = new pg.Client({ connectionString: testAdminUrl() });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `${TEST_DB_PREFIX}%`,
    ]);
    const old = rows.filter(
      ({ datname }) =>
        Date.now() - Number.parseInt(datname.slice(TEST_DB_PREFIX.length).split('_')[0] ?? '', 36) > olderThanMs,
    );
    for (const { datname } of old) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    return old.length;
  } finally {
    await admin.end();
  }
}

/** A path for a fresh SQLite file in a new temp directory. */
export function createSqlitePath(): string {
  return join(mkdtempSync(join(tmpdir(), 'runledger-')), 'test.db');
}
