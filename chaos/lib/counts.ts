import Database from 'better-sqlite3';
import pg from 'pg';

// What is stored, counted straight from the tables: the journal's head cursor on PostgreSQL trails
// the oldest open transaction on the whole server (other tests' too), so it can move later.
const COUNTS = `SELECT (SELECT count(*) FROM events) || ':' || (SELECT count(*) FROM projections) || ':' || (SELECT count(*) FROM tasks) || ':' || (SELECT count(*) FROM append_keys) AS counts`;

/** A string that changes whenever a row is stored in the journal, projections, tasks or idempotency keys. */
export async function storedCounts(
  database: string,
): Promise<{ read: () => Promise<string>; close: () => Promise<void> }> {
  if (!database.startsWith('postgres')) {
    const db = new Database(database, { readonly: true });
    return {
      read: async () => String((db.prepare(COUNTS).get() as { counts: string }).counts),
      close: async () => void db.close(),
    };
  }
  const client = new pg.Client({ connectionString: database });
  client.on('error', () => {});
  await client.connect();
  return {
    read: async () => String((await client.query<{ counts: string }>(COUNTS)).rows[0]!.counts),
    close: () => client.end(),
  };
}
