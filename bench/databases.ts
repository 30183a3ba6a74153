import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import { createSqlitePath, testAdminUrl } from '../dist/testing/databases.js';

export type Backend = 'sqlite' | 'postgres';

// Not createPostgresDatabase(): every test run's setup drops all `rl_test_` databases on the
// server, which killed the benchmark's database mid-run while tests ran in other checkouts.
const PREFIX = 'rl_bench_';

/** Runs `fn` on a fresh database of `backend` and removes the database afterwards. */
export async function withDatabase<T>(backend: Backend, fn: (database: string) => Promise<T>): Promise<T> {
  if (backend === 'sqlite') {
    const path = createSqlitePath();
    try {
      return await fn(path);
    } finally {
      rmSync(dirname(path), { recursive: true, force: true });
    }
  }
  const name = `${PREFIX}${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  try {
    const url = new URL(testAdminUrl());
    url.pathname = `/${name}`;
    return await fn(url.toString());
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

export async function postgresVersion(): Promise<string> {
  const [row] = await admin<{ server_version: string }>('SHOW server_version');
  return row!.server_version;
}

async function admin<R extends pg.QueryResultRow>(sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: testAdminUrl() });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}
