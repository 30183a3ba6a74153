import pg from 'pg';
import type { Writable } from 'node:stream';
import { LeaseLostError } from '../../errors.js';
import { loadMigrations } from '../migrations.js';

/**
 * Type parsers of this store's connections only (the global `pg.types` belongs to the host
 * application). int8 becomes a Number: every bigint here (ms times, positions, counts) stays far
 * below 2^53.
 */
export const typeParsers = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * Options of every connection this store opens. READ COMMITTED whatever the server's default:
 * the committed-order horizon and the ordering-key claim rely on each statement taking a fresh
 * snapshot. JIT off: our statements are short, but a batch of 20,000 rows makes the planner's cost
 * estimate cross the JIT threshold, and compiling then took 460 ms of a 1.1 s append (measured).
 */
export function connectionConfig(url: string): pg.ClientConfig {
  return {
    connectionString: url,
    types: typeParsers,
    options: '-c default_transaction_isolation=read\\ committed -c jit=off',
  };
}

/**
 * A statement each connection prepares once, then runs from its cached plan: for the fixed-shape
 * statements on the hot path. An append of 10 events took 0.25 ms prepared against 0.9 ms parsed
 * and planned every time (measured). The generic plans PostgreSQL settles on use hash joins over
 * the unnested arrays, so a batch of 20,000 is as fast as with a custom plan. Statements with
 * optional filters stay unprepared: a generic plan cannot drop the filters a call leaves out.
 */
export interface Prepared {
  name: string;
  text: string;
}

export type Sql = string | Prepared;

export const prepared = (name: string, text: string): Prepared => ({ name: `rl_${name}`, text });

function queryConfig(sql: Sql, values: unknown[] | undefined): pg.QueryConfig {
  return typeof sql === 'string' ? { text: sql, values } : { name: sql.name, text: sql.text, values };
}

/** Where a store's SQL runs: the pool (each statement commits on its own) or one transaction's client. */
export interface Db {
  readonly inTransaction: boolean;
  rows<R>(sql: Sql, params?: unknown[]): Promise<R[]>;
  /**
   * A write whose result nobody reads. In a transaction it is sent at once and not waited for:
   * the next statement or the `COMMIT` follows it on the wire (the connection pipelines), and its
   * failure is reported there. Outside one, it runs at once. `answer` gets its rows when they
   * arrive: in a transaction, before its `COMMIT` is sent (see `Tx.answers`).
   */
  write(sql: Sql, params: unknown[], answer?: (rows: unknown[]) => void): Promise<void>;
  /**
   * Runs `fn`'s statements with no other statement of the same transaction between them (callers
   * may run store methods of one transaction concurrently); `fn` must use the `Db` it is given.
   */
  atomic<T>(fn: (db: Db) => Promise<T>): Promise<T>;
}

/** A transaction's client; `finished` once it committed or rolled back. */
export interface Tx {
  client: pg.PoolClient;
  finished: boolean;
  /** The `BEGIN` was sent: it goes ahead of the transaction's first statement, not waited for. */
  begun: boolean;
  /** Sent, not waited for (the `BEGIN`, writes): the next statement or the `COMMIT` checks them first. */
  unchecked: Array<Promise<unknown>>;
  /**
   * Writes whose answer someone reads (`Db.write`'s `answer`): the `COMMIT` and the wake-ups sent
   * with it wait for them. A later statement of the transaction has almost always brought them in.
   */
  answers: Array<Promise<unknown>>;
}

/**
 * How long an idle pool connection stays open. pg's default, 10 s, closed them after every quiet
 * spell, and the next request paid for a new one: connecting, and PL/pgSQL compiling the append
 * functions and planning the statements again (a first transaction of an append and a view write
 * took 8.4–14.8 ms on a new connection, 1.0–2.6 ms on the same connection after it, measured).
 */
const IDLE_MS = 10 * 60_000;

/**
 * Pipelined connections (pg's `pipeline`): a statement is written at once, not after the last one's
 * answer, so a transaction's `BEGIN`, writes and `COMMIT` travel with its statements, each
 * prepared once per connection. Before, they went in one message of literal SQL, which the server
 * parsed and planned every time: a run view's upsert cost 200–260 µs of server CPU that way
 * against 80–117 µs prepared, an append 240–313 against 187–277 (measured).
 */
export function createPool(url: string, poolSize: number): pg.Pool {
  const pool = new pg.Pool({
    ...connectionConfig(url),
    max: poolSize,
    pipeline: true,
    idleTimeoutMillis: IDLE_MS,
  } as pg.PoolConfig);
  // An idle client losing its connection (server restart, network) must not crash the process;
  // the pool discards it and the next checkout opens a new one.
  pool.on('error', () => {});
  // Nor a checked-out one between statements (a restart's FATAL 57P01 with no statement in flight
  // is emitted as an 'error' event: it crashed `serve` in the chaos pg-restart-fast scenario). The
  // statements in flight still fail, and a broken client is not `_queryable`: its release removes it.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export function poolDb(pool: pg.Pool): Db {
  const db: Db = {
    inTransaction: false,
    rows: async (sql, params) => (await pool.query(queryConfig(sql, params)).catch(rethrow)).rows,
    write: async (sql, params, answer) => {
      const result = await pool.query(queryConfig(sql, params)).catch(rethrow);
      answer?.(result.rows);
    },
    atomic: (fn) => fn(db),
  };
  return db;
}

/** Sends `sql` in `tx` (its `BEGIN` first, once), without waiting for the answer. */
export function send(tx: Tx, sql: Sql, params: unknown[] = []): Promise<pg.QueryResult> {
  cork(tx.client);
  if (!tx.begun) {
    tx.begun = true;
    unchecked(tx, tx.client.query('BEGIN'));
  }
  return tx.client.query(queryConfig(sql, params)).catch(rethrow);
}

/**
 * Holds what the client writes until the statements made in this turn of the event loop are all
 * written: they leave in one socket write (pg writes each statement on its own, and each write
 * wakes the server once more). Measured, 10-step runs, 10 in flight, three pairs: Node's system
 * time per run 0.54–0.63 → 0.46–0.47 ms.
 */
function cork(client: pg.PoolClient): void {
  const stream = (client as unknown as { connection: { stream: Writable } }).connection.stream;
  if (stream.writableCorked > 0) return;
  stream.cork();
  process.nextTick(() => stream.uncork());
}

/** Waits for what `tx` sent before and did not check: the first failure is thrown. */
export async function check(tx: Tx): Promise<void> {
  for (const sent of tx.unchecked.splice(0)) await sent;
}

function unchecked(tx: Tx, sent: Promise<unknown>): void {
  // handled here: a failure is thrown by check(), and the ones after it must not go unhandled
  sent.catch(() => {});
  tx.unchecked.push(sent);
}

/**
 * Every statement of a transaction store checks first that its transaction is still open, and
 * goes after what `ahead` gives when the statement is made (the transaction's held projection
 * writes, `Puts`): sent first, in the order the statements were made.
 */
export function txDb(tx: Tx, ahead: () => ((db: Db) => Promise<void>) | undefined = () => undefined): Db {
  const open = () => {
    if (tx.finished) throw new Error('this transaction has already finished');
  };
  const direct: Db = {
    inTransaction: true,
    rows: async (sql, params) => {
      open();
      const before = tx.unchecked.splice(0);
      const result = send(tx, sql, params);
      result.catch(() => {});
      // an earlier write's failure first: it aborted the transaction, this statement's error only says so
      for (const sent of before) await sent;
      return (await result).rows;
    },
    write: async (sql, params, answer) => {
      open();
      const sent = send(tx, sql, params);
      unchecked(tx, sent);
      if (answer)
        tx.answers.push(
          sent.then(
            (result) => answer(result.rows),
            () => {},
          ),
        );
    },
    atomic: (fn) => fn(direct),
  };
  let tail: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn, fn);
    tail = run.catch(() => {});
    return run;
  };
  const after = <T>(fn: () => Promise<T>): Promise<T> => {
    const first = ahead();
    return serial(first ? () => first(direct).then(fn) : fn);
  };
  return {
    inTransaction: true,
    rows: (sql, params) => after(() => direct.rows(sql, params)),
    write: (sql, params, answer) => after(() => direct.write(sql, params, answer)),
    atomic: (fn) => after(() => fn(direct)),
  };
}

/**
 * Array parameters as PostgreSQL array literals. pg's own conversion took 120–280 ms for the
 * 160,000 elements of a 20,000-task enqueue; this takes a tenth of that.
 */
export function textArray(values: ReadonlyArray<string | null>): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ',';
    if (value === null || value === undefined) literal += 'NULL';
    else if (value.includes('"') || value.includes('\\')) literal += `"${value.replace(ESCAPED, '\\$&')}"`;
    else literal += `"${value}"`;
  }
  return `${literal}}`;
}

const ESCAPED = /["\\]/g;

/** Numbers as JavaScript prints them: a fraction in an integer column is rejected by PostgreSQL, never rounded. */
export function numberArray(values: ReadonlyArray<number | null>): string {
  return `{${values.map((value) => (value === null || value === undefined ? 'NULL' : String(value))).join(',')}}`;
}

/**
 * JSON documents as one JSON array, for `jsonb_array_elements($n::jsonb)`: joining documents that
 * are already JSON needs no escaping, unlike a text[] of them (5x faster, measured).
 */
export function jsonArray(documents: readonly string[]): string {
  return `[${documents.join(',')}]`;
}

/** RL410, raised by `rl_task_hold` (migration 100) and `rl_task_complete_held` (160) when a task is no longer held, is a `LeaseLostError`. */
export function rethrow(error: unknown): never {
  if (sqlState(error) === 'RL410') throw new LeaseLostError((error as Error).message);
  throw error;
}

/** The SQLSTATE of a PostgreSQL error, if `error` is one. */
export function sqlState(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

/** Arbitrary but fixed: every process migrating this database takes the same lock. */
const MIGRATION_LOCK = 7_245_118_204;

/**
 * Applies the pending migrations. Two processes opening the same database at once are safe: both
 * take one session advisory lock on a dedicated connection, so the second waits and then finds
 * nothing left to apply. Each migration commits on its own with its `schema_migrations` row.
 */
export async function migrate(url: string): Promise<void> {
  const client = new pg.Client(connectionConfig(url));
  // A lost connection also fails the query in flight, which is what reports it.
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)',
    );
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((row) => row.version));
    for (const migration of loadMigrations('postgres')) {
      if (applied.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query(
          'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)',
          [migration.version, migration.name],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    }
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
  } finally {
    // Ending the session also releases the lock when a migration failed.
    await client.end();
  }
}
