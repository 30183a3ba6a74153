import type {
  AgentEventChange,
  AgentEventRow,
  AgentEventStatus,
  AgentRunChange,
  ApprovalStatus,
  ToolCallStatus,
} from '../storage/ledger.js';
import type { Store } from '../storage/store.js';

/**
 * The state machines of the agent ledger, drawn once (and in docs/lifecycle.md). The ledger's
 * projections move a row only along an edge of its table; an event that would move it along no
 * edge (a late one, after the end) leaves the row as it is.
 */

/** An agent run's status: the common run vocabulary. */
export type AgentRunStatus = 'pending' | 'running' | 'waiting' | 'sleeping' | 'success' | 'failed';

export const agentRunTransitions = {
  /** SESSION_INITIATED: the run waits for its conversation's turn. */
  queue: { from: [null], to: 'pending' },
  /** agent.run.started or AGENT_INVOCATION_STARTED: its turn came. */
  start: { from: ['pending'], to: 'running' },
  /** A tool call waits for a person's decision (a durable wait: no worker is held). */
  wait: { from: ['running'], to: 'waiting' },
  /** A node failed and waits out its backoff. */
  sleep: { from: ['running'], to: 'sleeping' },
  /** The decision came, the approval expired, or the backoff passed and the node runs again. */
  resume: { from: ['waiting', 'sleeping'], to: 'running' },
  succeed: { from: ['running'], to: 'success' },
  fail: { from: ['pending', 'running', 'waiting', 'sleeping'], to: 'failed' },
} as const satisfies Record<string, { from: ReadonlyArray<AgentRunStatus | null>; to: AgentRunStatus }>;

/** A tool call's status (brief 003). `blocked` while it waits for approval, and for good once rejected or expired. */
export const toolCallTransitions = {
  /** A call that needs approval is made: blocked until a person decides. */
  request: { from: [null], to: 'blocked' },
  /** It runs: at once (no approval needed), once approved, or again after a failed attempt. */
  start: { from: [null, 'blocked', 'error', 'timeout', 'unknown'], to: 'started' },
  succeed: { from: ['started'], to: 'ok' },
  fail: { from: ['started', 'unknown'], to: 'error' },
  timeOut: { from: ['started'], to: 'timeout' },
  /** An effect tool's call whose outcome was not recorded (a crash between call and record, or its timeout). */
  lose: { from: ['started', 'timeout'], to: 'unknown' },
  /** Its `reconcile` (or a person) found it happened: its output is the one found. */
  reconcile: { from: ['unknown'], to: 'reconciled' },
} as const satisfies Record<string, { from: ReadonlyArray<ToolCallStatus | null>; to: ToolCallStatus }>;

/** The approval of a call that needs one. */
export const approvalTransitions = {
  request: { from: [null], to: 'pending' },
  approve: { from: ['pending'], to: 'approved' },
  reject: { from: ['pending'], to: 'rejected' },
  expire: { from: ['pending'], to: 'expired' },
} as const satisfies Record<string, { from: ReadonlyArray<ApprovalStatus | null>; to: ApprovalStatus }>;

/**
 * An inbound event's status (brief 003): `pending` again, with a later `available_at`, while a failed attempt backs
 * off.
 */
export const agentEventTransitions = {
  receive: { from: [null], to: 'pending' },
  process: { from: ['pending'], to: 'processing' },
  backOff: { from: ['processing'], to: 'pending' },
  finish: { from: ['processing'], to: 'done' },
  fail: { from: ['pending', 'processing'], to: 'failed' },
  /**
   * POST /agent/events/{id}/redrive: a fresh attempt count and a new run (agentEventRedrive; never a projection of a
   * run's events).
   */
  redrive: { from: ['failed'], to: 'pending' },
} as const satisfies Record<string, { from: ReadonlyArray<AgentEventStatus | null>; to: AgentEventStatus }>;

type Table = Record<string, { from: ReadonlyArray<string | null>; to: string }>;

/** Whether `table` has an edge from `from` to `to`. */
export function canMove(table: Table, from: string | null, to: string): boolean {
  return Object.values(table).some((t) => t.to === to && t.from.includes(from));
}

/** The states `table` has an edge from to `to` (for a conditional update: `WHERE status = ANY(…)`). */
export function sources(table: Table, to: string): string[] {
  return Object.values(table).flatMap((t) =>
    t.to === to ? t.from.filter((from): from is string => from !== null) : [],
  );
}

export function isRunEnded(status: string): boolean {
  return status === 'success' || status === 'failed';
}

/** Moves the run to `to` when its lifecycle has that edge from where it is (one conditional update). */
export async function moveRun(
  tx: Store,
  id: string,
  to: AgentRunStatus,
  at: number,
  change: AgentRunChange = {},
): Promise<void> {
  await tx.agentRunUpdate({ id, change: { ...change, status: to }, at, from: sources(agentRunTransitions, to) });
}

/** Moves the run's events to `to` where their lifecycle has that edge; the rest of `change` applies to all. */
export async function moveEvents(
  tx: Store,
  runId: string,
  to: AgentEventRow['status'],
  at: number,
  change: AgentEventChange = {},
  from: readonly string[] = sources(agentEventTransitions, to),
): Promise<void> {
  await tx.agentEventUpdate({ run_id: runId, change: { ...change, status: to }, at, from: [...from] });
}
