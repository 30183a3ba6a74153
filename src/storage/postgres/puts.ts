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

/** Key states (in a transaction that locked each key, its row is there and held: an update). */
const SLOT_ROWS = `INSERT INTO flow_keys (slot, version, state)
   SELECT s.slot, 1, s.state FROM ROWS FROM (unnest($1::text[]), jsonb_array_elements($2::jsonb)) AS s(slot, state)
   ORDER BY s.slot
   ON CONFLICT (slot) DO UPDATE SET state = excluded.state`;
const PUT_SLOTS = prepared('flow_key_put_states', SLOT_ROWS);

/** Key states and projection rows, one statement: a batch of keyed starts or ends writes both. */
const PUT_SLOTS_AND_ROWS = prepared(
  'flow_key_put_states_and_rows',
  `WITH keys AS (${SLOT_ROWS}) ${PUT_ROWS.text.replace(/\$1|\$2|\$3/g, (n) => `$${Number(n.slice(1)) + 2}`)}`,
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
  /** Concurrency keys' states (`slotPut`), by key, as JSON. */
  private readonly slots = new Map<string, string>();

  /** Holds `rows`; the value of a key held already is replaced (ON CONFLICT cannot touch a row twice in one statement). */
  add(name: string, rows: ProjectionRow[]): void {
    // as JSON now: the caller may change its object once the call returned (a run's kept view is)
    for (const row of rows)
      this.rows.set(`${name}\u0000${row.key}`, [name, row.key, JSON.stringify(row.value ?? null)]);
  }

  /** Holds a concurrency key's state; a key held already takes the newer one. */
  addSlot(slot: string, state: unknown): void {
    this.slots.set(slot, JSON.stringify(state ?? null));
  }

  /**
   * What is held, taken: the statements that write it through a `Db` (writes: not waited for in a transaction); none
   * when nothing is held.
   */
  take(): ((db: Db) => Promise<void>) | undefined {
    if (this.rows.size === 0 && this.slots.size === 0) return undefined;
    const rows = [...this.rows.values()];
    const slots = [...this.slots];
    this.rows.clear();
    this.slots.clear();
    const rowParams = [
      textArray(rows.map((r) => r[0])),
      textArray(rows.map((r) => r[1])),
      jsonArray(rows.map((r) => r[2])),
    ];
    const slotParams = [textArray(slots.map((s) => s[0])), jsonArray(slots.map((s) => s[1]))];
    if (slots.length === 0) return (db) => db.write(PUT_ROWS, rowParams);
    if (rows.length === 0) return (db) => db.write(PUT_SLOTS, slotParams);
    return (db) => db.write(PUT_SLOTS_AND_ROWS, [...slotParams, ...rowParams]);
  }
}
