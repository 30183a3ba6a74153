import type { StoreStatus } from '../store.js';
import type { Db } from './connection.js';
import * as tasks from './tasks.js';

/** What `runledger status` shows of a PostgreSQL store: its schema version, its counts and its (masked) URL. */
export async function storeStatus(db: Db, url: string): Promise<StoreStatus> {
  const [row] = await db.rows<{
    schema_version: number;
    events: number;
    streams: number;
    subscriptions: number;
  }>(
    `SELECT (SELECT max(version) FROM schema_migrations) AS schema_version, (SELECT count(*) FROM events) AS events,
       (SELECT count(*) FROM streams) AS streams, (SELECT count(*) FROM subscriptions) AS subscriptions`,
  );
  return {
    dialect: 'postgres',
    location: maskPassword(url),
    schemaVersion: row!.schema_version,
    events: row!.events,
    streams: row!.streams,
    tasks: await tasks.taskCounts(db),
    subscriptions: row!.subscriptions,
  };
}

/** The URL as shown by `runledger status`: the password never leaves the process. */
export function maskPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString();
  } catch {
    return url.replace(/password=\S+/gi, 'password=***');
  }
}
