import type { ProjectionRow } from '../projections.js';
import { jsonArray, prepared, textArray, type Db } from './connection.js';

/** Rows of any projections in one statement, sorted: two transactions writing the same rows lock them in one order. */
const PUT_ROWS = prepared(
  'projection_put_rows',
  `INSERT INTO projections (name, key, value, updated_at)
   SELECT r.name, r.key, r.value, rl_now_ms() FROM ROWS FROM (unnest($1::text[]), unnest($2::text[]), jsonb_array_elements($3::jsonb)) AS r(name, key, value)
   ORDER BY r.name, r.key
   ON CONFLICT (name, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
);

/** A projection row as sent: name, key, value as JSON. */
type Row = [string, string, string];

/** Upserts `rows` of projection `name`, one statement; a key given twice keeps its last value. */
export async function putRows(db: Db, name: string, rows: ProjectionRow[]): Promise<void> {
  const held = new Puts();
  held.add(name, rows);
  await held.take()?.(db);
}

/**
 * A transaction's projection writes, held until its next statement or its `COMMIT` and sent ahead
 * of it in one statement, whatever their projections: a batch's run views, step statistics and
 * execution rows went as three statements. A statement of the transaction that reads them comes
 * after them, so it sees them; a failure of theirs is reported by that statement, or the `COMMIT`.
 */
export class Puts {
  private readonly rows = new Map<string, Row>();

  /** Holds `rows`; the value of a key held already is replaced (ON CONFLICT cannot touch a row twice in one statement). */
  add(name: string, rows: ProjectionRow[]): void {
    // as JSON now: the caller may change its object once the call returned (a run's kept view is)
    for (const row of rows)
      this.rows.set(`${name}\u0000${row.key}`, [name, row.key, JSON.stringify(row.value ?? null)]);
  }

  /** What is held, taken: the statement that writes it through a `Db` (a write: not waited for in a transaction); none when nothing is held. */
  take(): ((db: Db) => Promise<void>) | undefined {
    if (this.rows.size === 0) return undefined;
    const rows = [...this.rows.values()];
    this.rows.clear();
    return (db) =>
      db.write(PUT_ROWS, [
        textArray(rows.map((r) => r[0])),
        textArray(rows.map((r) => r[1])),
        jsonArray(rows.map((r) => r[2])),
      ]);
  }
}
