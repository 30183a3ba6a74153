import type {
  AgentCheckpointRow,
  AgentEventListParams,
  AgentEventRow,
  AgentRunListParams,
  AgentRunRow,
  AgentStepRow,
  AgentToolCallRow,
  ApprovalStatus,
} from '../ledger.js';
import { changeColumns, fromRow, JSON_COLUMNS, type CHANGEABLE } from '../ledger.js';
import { fromText } from '../rows.js';
import type { Statements } from './connection.js';

type Row = Record<string, unknown>;

function insert(s: Statements, table: string, row: object): void {
  const json = JSON_COLUMNS[table]!;
  const entries = Object.entries(row);
  const sql = `INSERT INTO ${table} (${entries.map(([c]) => c).join(', ')}) VALUES (${entries.map(() => '?').join(', ')})`;
  s.get(sql).run(...entries.map(([c, v]) => (json.includes(c) ? JSON.stringify(v ?? null) : v)));
}

/**
 * `UPDATE table SET … WHERE <where>`; `attempt_count` only grows; `status` only where the row's
 * status is in `statusFrom`, when given. Returns the rows changed.
 */
function update(
  s: Statements,
  table: keyof typeof CHANGEABLE,
  change: object,
  at: number,
  where: string,
  params: unknown[],
  statusFrom?: string[],
): number {
  const set = changeColumns(table, change as Record<string, unknown>);
  const values: unknown[] = [];
  const assignments = set.map(([c, v]) => {
    if (c === 'attempt_count') return (values.push(v), 'attempt_count = max(attempt_count, ?)');
    if (c === 'status' && statusFrom)
      return (
        values.push(JSON.stringify(statusFrom), v),
        'status = CASE WHEN status IN (SELECT value FROM json_each(?)) THEN ? ELSE status END'
      );
    return (values.push(v), `${c} = ?`);
  });
  const sql = `UPDATE ${table} SET ${[...assignments, 'updated_at = ?'].join(', ')} WHERE ${where}`;
  return s.get(sql).run(...values, at, ...params).changes;
}

const read =
  <T>(table: string) =>
  (row: unknown) =>
    fromRow<T>(table, row as Row, fromText);

export function agentEventPut(s: Statements, p: { event: AgentEventRow }): void {
  insert(s, 'agent_events', p.event);
}

export function agentEventGet(s: Statements, p: { id?: string; idempotency_key?: string }): AgentEventRow | undefined {
  const row =
    p.id !== undefined
      ? s.get('SELECT * FROM agent_events WHERE id = ?').get(p.id)
      : s.get('SELECT * FROM agent_events WHERE idempotency_key = ?').get(p.idempotency_key);
  return row === undefined ? undefined : read<AgentEventRow>('agent_events')(row);
}

export function agentEventList(s: Statements, p: { run_id: string }): AgentEventRow[] {
  return s
    .get('SELECT * FROM agent_events WHERE run_id = ? ORDER BY created_at, id')
    .all(p.run_id)
    .map(read<AgentEventRow>('agent_events'));
}

export function agentEventPage(s: Statements, p: AgentEventListParams): AgentEventRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  for (const c of ['status', 'conversation_id', 'user_id', 'source'] as const) {
    if (p[c] !== undefined) where.push(`${c} = ?`), params.push(p[c]);
  }
  if (p.after !== undefined)
    where.push('(created_at, id) < (SELECT created_at, id FROM agent_events WHERE id = ?)'), params.push(p.after);
  const sql = `SELECT * FROM agent_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT ?`;
  return s
    .get(sql)
    .all(...params, p.limit)
    .map(read<AgentEventRow>('agent_events'));
}

export function agentEventRedrive(
  s: Statements,
  p: { id: string; run_id: string; retry_of: string; at: number },
): boolean {
  const moved =
    s
      .get(
        "UPDATE agent_events SET status = 'pending', attempt_count = 0, run_id = ?, available_at = ?, last_error = NULL, updated_at = ? WHERE id = ? AND status = 'failed'",
      )
      .run(p.run_id, p.at, p.at, p.id).changes > 0;
  if (moved) s.get('UPDATE agent_runs SET retry_of = ?, updated_at = ? WHERE id = ?').run(p.retry_of, p.at, p.run_id);
  return moved;
}

export function agentEventUpdate(
  s: Statements,
  p: { run_id: string; change: object; at: number; from?: string[] },
): number {
  return update(s, 'agent_events', p.change, p.at, 'run_id = ?', [p.run_id], p.from);
}

export function agentRunPut(s: Statements, p: { run: AgentRunRow }): void {
  insert(s, 'agent_runs', p.run);
}

export function agentRunGet(s: Statements, p: { id: string }): AgentRunRow | undefined {
  const row = s.get('SELECT * FROM agent_runs WHERE id = ?').get(p.id);
  return row === undefined ? undefined : read<AgentRunRow>('agent_runs')(row);
}

export function agentRunUpdate(s: Statements, p: { id: string; change: object; at: number; from?: string[] }): boolean {
  if (p.from)
    return (
      update(s, 'agent_runs', p.change, p.at, 'id = ? AND status IN (SELECT value FROM json_each(?))', [
        p.id,
        JSON.stringify(p.from),
      ]) > 0
    );
  return update(s, 'agent_runs', p.change, p.at, 'id = ?', [p.id]) > 0;
}

export function agentRunList(s: Statements, p: AgentRunListParams): AgentRunRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  const asc = p.order === 'asc';
  for (const c of ['conversation_id', 'user_id', 'status'] as const) {
    if (p[c] !== undefined) where.push(`${c} = ?`), params.push(p[c]);
  }
  if (p.after !== undefined) where.push(asc ? 'id > ?' : 'id < ?'), params.push(p.after);
  const sql = `SELECT * FROM agent_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${asc ? 'ASC' : 'DESC'} LIMIT ?`;
  return s
    .get(sql)
    .all(...params, p.limit)
    .map(read<AgentRunRow>('agent_runs'));
}

export function agentStepPut(s: Statements, p: { step: AgentStepRow }): void {
  insert(s, 'agent_steps', p.step);
}

export function agentStepUpdate(
  s: Statements,
  p: { run_id: string; seq: number; attempt: number; change: object; at: number },
): boolean {
  return (
    update(s, 'agent_steps', p.change, p.at, 'run_id = ? AND seq = ? AND attempt = ?', [p.run_id, p.seq, p.attempt]) > 0
  );
}

export function agentStepList(s: Statements, p: { run_id: string }): AgentStepRow[] {
  return s
    .get('SELECT * FROM agent_steps WHERE run_id = ? ORDER BY seq, attempt')
    .all(p.run_id)
    .map(read<AgentStepRow>('agent_steps'));
}

export function agentToolCallPut(s: Statements, p: { call: AgentToolCallRow }): void {
  insert(s, 'agent_tool_calls', p.call);
}

export function agentToolCallUpdate(
  s: Statements,
  p: ({ external_idempotency_key: string } | { run_id: string; seq: number }) & {
    change: object;
    at: number;
    approval_status?: ApprovalStatus;
  },
): boolean {
  const where = 'external_idempotency_key' in p ? ['external_idempotency_key = ?'] : ['run_id = ?', 'seq = ?'];
  const params: unknown[] = 'external_idempotency_key' in p ? [p.external_idempotency_key] : [p.run_id, p.seq];
  if (p.approval_status !== undefined) where.push('approval_status = ?'), params.push(p.approval_status);
  return update(s, 'agent_tool_calls', p.change, p.at, where.join(' AND '), params) > 0;
}

export function agentToolCallGet(
  s: Statements,
  p: { id?: string; external_idempotency_key?: string },
): AgentToolCallRow | undefined {
  const row =
    p.id !== undefined
      ? s.get('SELECT * FROM agent_tool_calls WHERE id = ?').get(p.id)
      : s.get('SELECT * FROM agent_tool_calls WHERE external_idempotency_key = ?').get(p.external_idempotency_key);
  return row === undefined ? undefined : read<AgentToolCallRow>('agent_tool_calls')(row);
}

export function agentToolCallList(
  s: Statements,
  p: { run_id?: string; approval_status?: ApprovalStatus; limit: number; after?: string },
): AgentToolCallRow[] {
  const where: string[] = [];
  const params: unknown[] = [];
  if (p.run_id !== undefined) where.push('run_id = ?'), params.push(p.run_id);
  if (p.approval_status !== undefined) where.push('approval_status = ?'), params.push(p.approval_status);
  if (p.after !== undefined) where.push('id > ?'), params.push(p.after);
  const sql = `SELECT * FROM agent_tool_calls ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${p.run_id !== undefined ? 'created_at, id' : 'id'} LIMIT ?`;
  return s
    .get(sql)
    .all(...params, p.limit)
    .map(read<AgentToolCallRow>('agent_tool_calls'));
}

export function agentCheckpointPut(s: Statements, p: { checkpoint: AgentCheckpointRow }): void {
  insert(s, 'agent_checkpoints', p.checkpoint);
}

export function agentCheckpointList(s: Statements, p: { run_id: string }): AgentCheckpointRow[] {
  return s
    .get('SELECT * FROM agent_checkpoints WHERE run_id = ? ORDER BY seq')
    .all(p.run_id)
    .map(read<AgentCheckpointRow>('agent_checkpoints'));
}

/** Children first: `agent_runs.event_id` references `agent_events`, the other tables reference `agent_runs`. */
export function agentRunDelete(s: Statements, p: { ids: string[] }): { rows: number } {
  let rows = 0;
  for (let i = 0; i < p.ids.length; i += 500) {
    const ids = JSON.stringify(p.ids.slice(i, i + 500));
    for (const table of ['agent_steps', 'agent_tool_calls', 'agent_checkpoints']) {
      rows += s.get(`DELETE FROM ${table} WHERE run_id IN (SELECT value FROM json_each(?))`).run(ids).changes;
    }
    rows += s.get('DELETE FROM agent_runs WHERE id IN (SELECT value FROM json_each(?))').run(ids).changes;
    rows += s
      .get(
        'DELETE FROM agent_events WHERE run_id IN (SELECT value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.event_id = agent_events.id)',
      )
      .run(ids).changes;
  }
  return { rows };
}
