import type { SlotWaiter } from '../store-slots.js';
import type { Db } from './connection.js';

interface Row {
  slot: string;
  run_id: string;
  priority: number;
  seq: number;
  grp: string | null;
  data: unknown;
}

const waiterOf = (r: Row): SlotWaiter => ({
  slot: r.slot,
  runId: r.run_id,
  priority: r.priority,
  seq: Number(r.seq),
  group: r.grp,
  data: r.data,
});

export async function slotWaiterAdd(db: Db, p: SlotWaiter): Promise<void> {
  await db.rows(
    `INSERT INTO flow_waiters (slot, run_id, priority, seq, grp, data) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
     ON CONFLICT (slot, run_id) DO NOTHING`,
    [p.slot, p.runId, p.priority, p.seq, p.group, JSON.stringify(p.data ?? null)],
  );
}

export async function slotWaiterList(
  db: Db,
  p: { slot: string; group?: string | null; limit: number },
): Promise<SlotWaiter[]> {
  const group = p.group === undefined ? '' : p.group === null ? 'AND grp IS NULL' : 'AND grp = $3';
  const params: unknown[] = [p.slot, p.limit, ...(typeof p.group === 'string' ? [p.group] : [])];
  const rows = await db.rows<Row>(
    `SELECT * FROM flow_waiters WHERE slot = $1 ${group} ORDER BY priority DESC, seq LIMIT $2`,
    params,
  );
  return rows.map(waiterOf);
}

export async function slotWaiterDelete(db: Db, p: { slot: string; runIds: string[] }): Promise<SlotWaiter[]> {
  if (p.runIds.length === 0) return [];
  const rows = await db.rows<Row>('DELETE FROM flow_waiters WHERE slot = $1 AND run_id = ANY($2::text[]) RETURNING *', [
    p.slot,
    p.runIds,
  ]);
  return rows.map(waiterOf);
}

const LOCK = `INSERT INTO flow_keys (slot, version)
  SELECT k.slot, 1 FROM unnest($1::text[]) WITH ORDINALITY AS k(slot, n) ORDER BY k.n
  ON CONFLICT (slot) DO UPDATE SET version = flow_keys.version + 1
  RETURNING slot, state`;

/**
 * DO UPDATE waits for a transaction holding a key's row and answers the row it committed: the key's newest state. In a
 * transaction it is written without waiting for its answer (`Db.write`), so the transaction's next statement goes
 * with it in one round trip; its answer comes first.
 */
export function slotLock(db: Db, p: { slots: string[] }): Promise<Array<{ slot: string; state: unknown }>> {
  const states = (rows: unknown[]) =>
    (rows as Array<{ slot: string; state: unknown }>).map((r) => ({ slot: r.slot, state: r.state ?? undefined }));
  if (!db.inTransaction) return db.rows(LOCK, [p.slots]).then(states);
  return new Promise((resolve, reject) => {
    db.write(LOCK, [p.slots], (rows) => resolve(states(rows))).catch(reject);
  });
}

export async function slotGet(db: Db, p: { slots: string[] }): Promise<Array<{ slot: string; state: unknown }>> {
  return db.rows<{ slot: string; state: unknown }>(
    'SELECT slot, state FROM flow_keys WHERE slot = ANY($1::text[]) AND state IS NOT NULL',
    [p.slots],
  );
}

export async function slotList(
  db: Db,
  p: { after?: string; limit: number },
): Promise<Array<{ slot: string; state: unknown }>> {
  return db.rows<{ slot: string; state: unknown }>(
    'SELECT slot, state FROM flow_keys WHERE state IS NOT NULL AND slot > $1 ORDER BY slot LIMIT $2',
    [p.after ?? '', p.limit],
  );
}
