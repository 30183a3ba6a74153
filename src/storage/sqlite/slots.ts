import type { SlotWaiter } from '../store-slots.js';
import type { Statements } from './connection.js';

interface Row {
  slot: string;
  run_id: string;
  priority: number;
  seq: number;
  grp: string | null;
  data: string;
}

const waiterOf = (r: Row): SlotWaiter => ({
  slot: r.slot,
  runId: r.run_id,
  priority: r.priority,
  seq: r.seq,
  group: r.grp,
  data: JSON.parse(r.data),
});

export function slotWaiterAdd(s: Statements, p: SlotWaiter): void {
  s.get(
    `INSERT INTO flow_waiters (slot, run_id, priority, seq, grp, data) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (slot, run_id) DO NOTHING`,
  ).run(p.slot, p.runId, p.priority, p.seq, p.group, JSON.stringify(p.data ?? null));
}

export function slotWaiterList(s: Statements, p: { slot: string; group?: string | null; limit: number }): SlotWaiter[] {
  const group = p.group === undefined ? '' : p.group === null ? 'AND grp IS NULL' : 'AND grp = ?';
  const params: unknown[] = [p.slot, ...(typeof p.group === 'string' ? [p.group] : []), p.limit];
  const rows = s
    .get(`SELECT * FROM flow_waiters WHERE slot = ? ${group} ORDER BY priority DESC, seq LIMIT ?`)
    .all(...params) as Row[];
  return rows.map(waiterOf);
}

export function slotWaiterDelete(s: Statements, p: { slot: string; runIds: string[] }): SlotWaiter[] {
  if (p.runIds.length === 0) return [];
  const rows = s
    .get('DELETE FROM flow_waiters WHERE slot = ? AND run_id IN (SELECT value FROM json_each(?)) RETURNING *')
    .all(p.slot, JSON.stringify(p.runIds)) as Row[];
  return rows.map(waiterOf);
}

const stateOf = (state: string | null): unknown => (state === null ? undefined : JSON.parse(state));

/** A write transaction here excludes every other writer already (BEGIN IMMEDIATE): the lock is a read of the states. */
export function slotLock(s: Statements, p: { slots: string[] }): Array<{ slot: string; state: unknown }> {
  const read = s.get('SELECT state FROM flow_keys WHERE slot = ?');
  return p.slots.map((slot) => ({
    slot,
    state: stateOf((read.get(slot) as { state: string | null } | undefined)?.state ?? null),
  }));
}

export function slotPut(s: Statements, p: { slot: string; state: unknown }): void {
  s.get(
    `INSERT INTO flow_keys (slot, version, state) VALUES (?, 1, ?)
     ON CONFLICT (slot) DO UPDATE SET state = excluded.state`,
  ).run(p.slot, JSON.stringify(p.state ?? null));
}

export function slotGet(s: Statements, p: { slots: string[] }): Array<{ slot: string; state: unknown }> {
  const rows = s
    .get('SELECT slot, state FROM flow_keys WHERE slot IN (SELECT value FROM json_each(?)) AND state IS NOT NULL')
    .all(JSON.stringify(p.slots)) as Array<{ slot: string; state: string }>;
  return rows.map((r) => ({ slot: r.slot, state: stateOf(r.state) }));
}

export function slotList(s: Statements, p: { after?: string; limit: number }): Array<{ slot: string; state: unknown }> {
  const rows = s
    .get('SELECT slot, state FROM flow_keys WHERE state IS NOT NULL AND slot > ? ORDER BY slot LIMIT ?')
    .all(p.after ?? '', p.limit) as Array<{ slot: string; state: string }>;
  return rows.map((r) => ({ slot: r.slot, state: stateOf(r.state) }));
}
