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

export async function slotLock(
  db: Db,
  p: { slots: string[]; projection: string },
): Promise<Array<{ slot: string; version: number; value: unknown }>> {
  const rows = await db.rows<{ slot: string; version: string | number; value: unknown }>(
    `INSERT INTO flow_keys (slot, version)
     SELECT k.slot, 1 FROM unnest($1::text[]) WITH ORDINALITY AS k(slot, n) ORDER BY k.n
     ON CONFLICT (slot) DO UPDATE SET version = flow_keys.version + 1
     RETURNING slot, version, (SELECT value FROM projections WHERE name = $2 AND key = flow_keys.slot) AS value`,
    [p.slots, p.projection],
  );
  return rows.map((r) => ({ slot: r.slot, version: Number(r.version), value: r.value ?? undefined }));
}
