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
import { asParsed } from '../rows.js';
import { textArray, type Db } from './connection.js';

type Row = Record<string, unknown>;

async function insert(db: Db, table: string, row: object): Promise<void> {
  const json = JSON_COLUMNS[table]!;
  const entries = Object.entries(row);
  const sql = `INSERT INTO ${table} (${entries.map(([c]) => c).join(', ')}) VALUES (${entries.map((_, i) => `$${i + 1}`).join(', ')})`;
  await db.rows(
    sql,
    entries.map(([c, v]) => (json.includes(c) ? JSON.stringify(v ?? null) : v)),
  );
}

/**
 * `UPDATE table SET … WHERE <where>` (its placeholders numbered from 1); `attempt_count` only
 * grows; `status` only where the row's status is in `statusFrom`, when given. Returns the rows changed.
 */
async function update(
  db: Db,
  table: keyof typeof CHANGEABLE,
  change: object,
  at: number,
  where: string,
  params: unknown[],
  statusFrom?: string[],
): Promise<number> {
  const set = changeColumns(table, change as Record<string, unknown>);
  const values: unknown[] = [...params];
  const next = (value: unknown) => `$${values.push(value)}`;
  const assignments = set.map(([c, v]) => {
    if (c === 'attempt_count') return `attempt_count = GREATEST(attempt_count, ${next(v)})`;
    if (c === 'status' && statusFrom)
      return `status = CASE WHEN status = ANY(${next(textArray(statusFrom))}::text[]) THEN ${next(v)} ELSE status END`;
    return `${c} = ${next(v)}`;
  });
  const sql = `UPDATE ${table} SET ${[...assignments, `updated_at = ${next(at)}`].join(', ')} WHERE ${where} RETURNING 1`;
  return (await db.rows(sql, values)).length;
}

const read =
  <T>(table: string) =>
  (row: unknown) =>
    fromRow<T>(table, row as Row, asParsed);

export async function agentEventPut(db: Db, p: { event: AgentEventRow }): Promise<void> {
  await insert(db, 'agent_events', p.event);
}

export async function agentEventGet(
  db: Db,
  p: { id?: string; idempotency_key?: string },
): Promise<AgentEventRow | undefined> {
  const [row] =
    p.id !== undefined
      ? await db.rows('SELECT * FROM agent_events WHERE id = $1', [p.id])
      : await db.rows('SELECT * FROM agent_events WHERE idempotency_key = $1', [p.idempotency_key]);
  return row === undefined ? undefined : read<AgentEventRow>('agent_events')(row);
}

export async function agentEventList(db: Db, p: { run_id: string }): Promise<AgentEventRow[]> {
  return (await db.rows('SELECT * FROM agent_events WHERE run_id = $1 ORDER BY created_at, id', [p.run_id])).map(
    read<AgentEventRow>('agent_events'),
  );
}

export async function agentEventPage(db: Db, p: AgentEventListParams): Promise<AgentEventRow[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  for (const c of ['status', 'conversation_id', 'user_id', 'source'] as const) {
    if (p[c] !== undefined) params.push(p[c]), where.push(`${c} = $${params.length}`);
  }
  if (p.after !== undefined)
    params.push(p.after),
      where.push(`(created_at, id) < (SELECT created_at, id FROM agent_events WHERE id = $${params.length})`);
  params.push(p.limit);
  const sql = `SELECT * FROM agent_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`;
  return (await db.rows(sql, params)).map(read<AgentEventRow>('agent_events'));
}

export async function agentEventRedrive(
  db: Db,
  p: { id: string; run_id: string; retry_of: string; at: number },
): Promise<boolean> {
  const moved = await db.rows(
    "UPDATE agent_events SET status = 'pending', attempt_count = 0, run_id = $1, available_at = $2, last_error = NULL, updated_at = $2 WHERE id = $3 AND status = 'failed' RETURNING 1",
    [p.run_id, p.at, p.id],
  );
  if (moved.length > 0)
    await db.rows('UPDATE agent_runs SET retry_of = $1, updated_at = $2 WHERE id = $3', [p.retry_of, p.at, p.run_id]);
  return moved.length > 0;
}

export function agentEventUpdate(
  db: Db,
  p: { run_id: string; change: object; at: number; from?: string[] },
): Promise<number> {
  return update(db, 'agent_events', p.change, p.at, 'run_id = $1', [p.run_id], p.from);
}

export async function agentRunPut(db: Db, p: { run: AgentRunRow }): Promise<void> {
  await insert(db, 'agent_runs', p.run);
}

export async function agentRunGet(db: Db, p: { id: string }): Promise<AgentRunRow | undefined> {
  const [row] = await db.rows('SELECT * FROM agent_runs WHERE id = $1', [p.id]);
  return row === undefined ? undefined : read<AgentRunRow>('agent_runs')(row);
}

export async function agentRunUpdate(
  db: Db,
  p: { id: string; change: object; at: number; from?: string[] },
): Promise<boolean> {
  if (p.from)
    return (
      (await update(db, 'agent_runs', p.change, p.at, 'id = $1 AND status = ANY($2::text[])', [
        p.id,
        textArray(p.from),
      ])) > 0
    );
  return (await update(db, 'agent_runs', p.change, p.at, 'id = $1', [p.id])) > 0;
}

export async function agentRunList(db: Db, p: AgentRunListParams): Promise<AgentRunRow[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  const asc = p.order === 'asc';
  for (const c of ['conversation_id', 'user_id', 'status'] as const) {
    if (p[c] !== undefined) params.push(p[c]), where.push(`${c} = $${params.length}`);
  }
  if (p.after !== undefined) params.push(p.after), where.push(`id ${asc ? '>' : '<'} $${params.length}`);
  params.push(p.limit);
  const sql = `SELECT * FROM agent_runs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${asc ? 'ASC' : 'DESC'} LIMIT $${params.length}`;
  return (await db.rows(sql, params)).map(read<AgentRunRow>('agent_runs'));
}

export async function agentStepPut(db: Db, p: { step: AgentStepRow }): Promise<void> {
  await insert(db, 'agent_steps', p.step);
}

export async function agentStepUpdate(
  db: Db,
  p: { run_id: string; seq: number; attempt: number; change: object; at: number },
): Promise<boolean> {
  return (
    (await update(db, 'agent_steps', p.change, p.at, 'run_id = $1 AND seq = $2 AND attempt = $3', [
      p.run_id,
      p.seq,
      p.attempt,
    ])) > 0
  );
}

export async function agentStepList(db: Db, p: { run_id: string }): Promise<AgentStepRow[]> {
  return (await db.rows('SELECT * FROM agent_steps WHERE run_id = $1 ORDER BY seq, attempt', [p.run_id])).map(
    read<AgentStepRow>('agent_steps'),
  );
}

export async function agentToolCallPut(db: Db, p: { call: AgentToolCallRow }): Promise<void> {
  await insert(db, 'agent_tool_calls', p.call);
}

export async function agentToolCallUpdate(
  db: Db,
  p: ({ external_idempotency_key: string } | { run_id: string; seq: number }) & {
    change: object;
    at: number;
    approval_status?: ApprovalStatus;
  },
): Promise<boolean> {
  const where = 'external_idempotency_key' in p ? ['external_idempotency_key = $1'] : ['run_id = $1', 'seq = $2'];
  const params: unknown[] = 'external_idempotency_key' in p ? [p.external_idempotency_key] : [p.run_id, p.seq];
  if (p.approval_status !== undefined)
    params.push(p.approval_status), where.push(`approval_status = $${params.length}`);
  return (await update(db, 'agent_tool_calls', p.change, p.at, where.join(' AND '), params)) > 0;
}

export async function agentToolCallGet(
  db: Db,
  p: { id?: string; external_idempotency_key?: string },
): Promise<AgentToolCallRow | undefined> {
  const [row] =
    p.id !== undefined
      ? await db.rows('SELECT * FROM agent_tool_calls WHERE id = $1', [p.id])
      : await db.rows('SELECT * FROM agent_tool_calls WHERE external_idempotency_key = $1', [
          p.external_idempotency_key,
        ]);
  return row === undefined ? undefined : read<AgentToolCallRow>('agent_tool_calls')(row);
}

export async function agentToolCallList(
  db: Db,
  p: { run_id?: string; approval_status?: ApprovalStatus; limit: number; after?: string },
): Promise<AgentToolCallRow[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (p.run_id !== undefined) params.push(p.run_id), where.push(`run_id = $${params.length}`);
  if (p.approval_status !== undefined)
    params.push(p.approval_status), where.push(`approval_status = $${params.length}`);
  if (p.after !== undefined) params.push(p.after), where.push(`id > $${params.length}`);
  params.push(p.limit);
  const sql = `SELECT * FROM agent_tool_calls ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${p.run_id !== undefined ? 'created_at, id' : 'id'} LIMIT $${params.length}`;
  return (await db.rows(sql, params)).map(read<AgentToolCallRow>('agent_tool_calls'));
}

export async function agentCheckpointPut(db: Db, p: { checkpoint: AgentCheckpointRow }): Promise<void> {
  await insert(db, 'agent_checkpoints', p.checkpoint);
}

export async function agentCheckpointList(db: Db, p: { run_id: string }): Promise<AgentCheckpointRow[]> {
  return (await db.rows('SELECT * FROM agent_checkpoints WHERE run_id = $1 ORDER BY seq', [p.run_id])).map(
    read<AgentCheckpointRow>('agent_checkpoints'),
  );
}

/** Children first: `agent_runs.event_id` references `agent_events`, the other tables reference `agent_runs`. */
export async function agentRunDelete(db: Db, p: { ids: string[] }): Promise<{ rows: number }> {
  if (p.ids.length === 0) return { rows: 0 };
  const [row] = await db.rows<{ rows: number }>(
    `WITH steps AS (DELETE FROM agent_steps WHERE run_id = ANY($1::text[]) RETURNING 1),
       calls AS (DELETE FROM agent_tool_calls WHERE run_id = ANY($1::text[]) RETURNING 1),
       checkpoints AS (DELETE FROM agent_checkpoints WHERE run_id = ANY($1::text[]) RETURNING 1),
       runs AS (DELETE FROM agent_runs WHERE id = ANY($1::text[]) RETURNING 1)
     SELECT (SELECT count(*) FROM steps) + (SELECT count(*) FROM calls) + (SELECT count(*) FROM checkpoints) + (SELECT count(*) FROM runs) AS rows`,
    [textArray(p.ids)],
  );
  // a separate statement: the runs' deletion above must be visible before their events can go
  const events = await db.rows(
    'DELETE FROM agent_events e WHERE run_id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.event_id = e.id) RETURNING 1',
    [textArray(p.ids)],
  );
  return { rows: Number(row?.rows ?? 0) + events.length };
}
