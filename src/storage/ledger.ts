/**
 * The agent ledger's rows (brief 003), as both backends store and return them: the columns of
 * `agent_events`, `agent_runs`, `agent_steps`, `agent_tool_calls` and `agent_checkpoints`, under
 * their SQL names, so what a user queries with SQL and what the code reads are spelled alike.
 * Times are ms since the epoch (database clock); JSON columns hold any JSON value.
 */
import type { Json } from './rows.js';

export type AgentEventStatus = 'pending' | 'processing' | 'done' | 'failed';
export type AgentStepStatus = 'started' | 'ok' | 'error' | 'skipped';
export type ToolCallStatus = 'started' | 'ok' | 'error' | 'timeout' | 'blocked' | 'unknown' | 'reconciled';
export type RiskLevel = 'low' | 'medium' | 'high';
export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';

export interface AgentEventRow {
  id: string;
  conversation_id: string;
  user_id: string;
  source: string;
  input_type: string;
  payload: unknown;
  idempotency_key: string;
  agent: string;
  /** The run that handles the event (with `coalesce`, several events share one). */
  run_id: string;
  /** The arrival policy's decision: `queued` (a run of its own) or `coalesced` (joined a waiting run). */
  decision: 'queued' | 'coalesced';
  status: AgentEventStatus;
  attempt_count: number;
  available_at: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface AgentRunRow {
  id: string;
  event_id: string | null;
  conversation_id: string | null;
  user_id: string | null;
  agent: string;
  status: string;
  graph_version: string;
  input_class: string;
  started_at: number | null;
  ended_at: number | null;
  failure_reason: string | null;
  /** A redriven event's run: the run of the event's previous attempts (whose rows stay). */
  retry_of: string | null;
  created_at: number;
  updated_at: number;
}

export interface AgentStepRow {
  id: string;
  run_id: string;
  node: string;
  /** The node's position among the run's journaled calls, and its attempt: one row per attempt. */
  seq: number;
  attempt: number;
  status: AgentStepStatus;
  input_snapshot: unknown;
  output_snapshot: unknown;
  error: string | null;
  latency_ms: number | null;
  created_at: number;
  updated_at: number;
}

export interface AgentToolCallRow {
  id: string;
  run_id: string;
  external_idempotency_key: string;
  node: string | null;
  /** The position of the call's run step among the run's journaled calls; null until it starts. */
  seq: number | null;
  tool_name: string;
  risk_level: RiskLevel;
  input: unknown;
  output: unknown;
  status: ToolCallStatus;
  error: string | null;
  attempts: number;
  started_at: number | null;
  ended_at: number | null;
  /** null: the call needed no approval. */
  approval_status: ApprovalStatus | null;
  approval_by: string | null;
  approval_reason: string | null;
  approval_expires_at: number | null;
  decided_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface AgentCheckpointRow {
  id: string;
  run_id: string;
  node: string;
  seq: number;
  state: unknown;
  created_at: number;
}

export type AgentEventChange = Partial<Pick<AgentEventRow, 'status' | 'attempt_count' | 'available_at' | 'last_error'>>;
export type AgentRunChange = Partial<Pick<AgentRunRow, 'status' | 'started_at' | 'ended_at' | 'failure_reason'>>;
export type AgentStepChange = Partial<Pick<AgentStepRow, 'status' | 'output_snapshot' | 'error' | 'latency_ms'>>;
export type AgentToolCallChange = Partial<
  Pick<
    AgentToolCallRow,
    | 'seq'
    | 'status'
    | 'output'
    | 'error'
    | 'attempts'
    | 'started_at'
    | 'ended_at'
    | 'approval_status'
    | 'approval_by'
    | 'approval_reason'
    | 'decided_at'
  >
>;

export interface AgentRunListParams {
  conversation_id?: string;
  user_id?: string;
  status?: string;
  limit: number;
  /** Exclusive id bound: the cursor of the previous page. */
  after?: string;
  /** `desc`: newest first (default); `asc`: oldest first. */
  order?: 'asc' | 'desc';
}

/** Inbound events newest first (received time, then id, both descending), filtered. */
export interface AgentEventListParams {
  status?: AgentEventStatus;
  conversation_id?: string;
  user_id?: string;
  source?: string;
  limit: number;
  /** The id of the last event of the previous page: the page starts after it in that order. */
  after?: string;
}

/** The columns an update may set, per table: the SQL of both backends is built from these names only. */
export const CHANGEABLE = {
  agent_events: ['status', 'attempt_count', 'available_at', 'last_error'],
  agent_runs: ['status', 'started_at', 'ended_at', 'failure_reason'],
  agent_steps: ['status', 'output_snapshot', 'error', 'latency_ms'],
  agent_tool_calls: [
    'seq',
    'status',
    'output',
    'error',
    'attempts',
    'started_at',
    'ended_at',
    'approval_status',
    'approval_by',
    'approval_reason',
    'decided_at',
  ],
} as const;

/** JSON columns, per table. */
export const JSON_COLUMNS: Record<string, readonly string[]> = {
  agent_events: ['payload'],
  agent_runs: [],
  agent_steps: ['input_snapshot', 'output_snapshot'],
  agent_tool_calls: ['input', 'output'],
  agent_checkpoints: ['state'],
};

/** The set columns of a change, in a fixed order, with their values as the driver takes them. */
export function changeColumns(
  table: keyof typeof CHANGEABLE,
  change: Record<string, unknown>,
): Array<[string, unknown]> {
  const json = JSON_COLUMNS[table]!;
  return (CHANGEABLE[table] as readonly string[])
    .filter((c) => change[c] !== undefined)
    .map((c) => [c, json.includes(c) ? JSON.stringify(change[c] ?? null) : change[c]]);
}

/** A row read back: JSON columns parsed. */
export function fromRow<T>(table: string, row: Record<string, unknown>, json: Json): T {
  const out: Record<string, unknown> = { ...row };
  for (const c of JSON_COLUMNS[table]!) out[c] = out[c] === null || out[c] === undefined ? null : json(out[c]);
  return out as T;
}
