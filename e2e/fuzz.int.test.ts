import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { fuzz } from '../chaos/fuzz.js';
import { startServer, type Server } from '../src/server/start.js';
import { backends } from '../src/testing/backends.js';

// What is stored, counted straight from the tables: the journal's head cursor on PostgreSQL trails
// the oldest open transaction on the whole server (other tests' too), so it can move later.
const COUNTS = `SELECT (SELECT count(*) FROM events) || ':' || (SELECT count(*) FROM projections) || ':' || (SELECT count(*) FROM tasks) || ':' || (SELECT count(*) FROM append_keys) AS counts`;

async function counter(database: string): Promise<{ counts: () => Promise<string>; close: () => Promise<void> }> {
  if (!database.startsWith('postgres')) {
    const db = new Database(database, { readonly: true });
    return {
      counts: async () => String((db.prepare(COUNTS).get() as { counts: string }).counts),
      close: async () => void db.close(),
    };
  }
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  return {
    counts: async () => String((await client.query<{ counts: string }>(COUNTS)).rows[0]!.counts),
    close: () => client.end(),
  };
}

const TOKEN = 'e2e-fuzz-token-0123456789';

describe.each(backends)('bad-input fuzzer on $name', (backend) => {
  let server: Server | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers every malformed, deep, huge, NUL, surrogate, traversal and bad-escape input to every route with a 4xx, storing nothing', {
    timeout: 120_000,
  }, async () => {
    const database = await backend.create();
    // no workers: nothing but the fuzzer's own requests may change what is stored
    server = await startServer({
      database,
      port: 0,
      workers: false,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-fuzz-')),
      logger: pino({ level: 'silent' }),
      // with a token: a key the fuzzer creates (`POST /keys`, a good body) would turn authentication on, and every
      // request after it would stop at the 401 with its bad input unread
      token: TOKEN,
    });
    const stored = await counter(database);
    const started = Date.now();
    const headers = { authorization: `Bearer ${TOKEN}` };
    const report = await fuzz(server.url, { fingerprint: stored.counts, headers }).finally(() => stored.close());
    console.log(
      `fuzz on ${backend.name}: ${report.requests} requests in ${Date.now() - started} ms, ${JSON.stringify(report.statuses)}`,
    );
    expect(report.failures).toEqual([]);
    expect(report.requests).toBeGreaterThan(1000);
    expect(report.statuses['4xx']).toBeGreaterThan(report.requests * 0.8);
  });
});
