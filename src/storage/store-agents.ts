import type {
  AgentCheckpointRow,
  AgentEventChange,
  AgentEventListParams,
  AgentEventRow,
  AgentRunChange,
  AgentRunListParams,
  AgentRunRow,
  AgentStepChange,
  AgentStepRow,
  AgentToolCallChange,
  AgentToolCallRow,
  ApprovalStatus,
} from './ledger.js';

/** The agent ledger (`ledger.ts`): projections of the journal, written by its projections. */
export interface AgentLedgerStore {
  agentEventPut(p: { event: AgentEventRow }): Promise<void>;
  /** By id, or by idempotency key. */
  agentEventGet(p: { id?: string; idempotency_key?: string }): Promise<AgentEventRow | undefined>;
  /** The events a run handles, oldest first. */
  agentEventList(p: { run_id: string }): Promise<AgentEventRow[]>;
  /** Inbound events newest first (received time, then id), filtered; `after`: an event id, the previous page's last. */
  agentEventPage(p: AgentEventListParams): Promise<AgentEventRow[]>;
  /**
   * A failed event back to `pending` with a fresh attempt count, handled by run `run_id` from now on;
   * that run's row links to `retry_of`. false (nothing changed): the event is not failed.
   */
  agentEventRedrive(p: { id: string; run_id: string; retry_of: string; at: number }): Promise<boolean>;
  /**
   * Changes every event of the run; `attempt_count` only grows; with `from`, the change's `status`
   * only where an event's status is one of them (a lifecycle edge). Returns how many rows changed.
   */
  agentEventUpdate(p: { run_id: string; change: AgentEventChange; at: number; from?: string[] }): Promise<number>;
  agentRunPut(p: { run: AgentRunRow }): Promise<void>;
  agentRunGet(p: { id: string }): Promise<AgentRunRow | undefined>;
  /** false: no such run (the run is not an agent run), or, with `from`, its status is none of them. */
  agentRunUpdate(p: { id: string; change: AgentRunChange; at: number; from?: string[] }): Promise<boolean>;
  /** Runs by id (newest first, or oldest with `order: 'asc'`), filtered, after the `after` id. */
  agentRunList(p: AgentRunListParams): Promise<AgentRunRow[]>;
  agentStepPut(p: { step: AgentStepRow }): Promise<void>;
  agentStepUpdate(p: {
    run_id: string;
    seq: number;
    attempt: number;
    change: AgentStepChange;
    at: number;
  }): Promise<boolean>;
  /** In the run's order: by seq, then attempt. */
  agentStepList(p: { run_id: string }): Promise<AgentStepRow[]>;
  agentToolCallPut(p: { call: AgentToolCallRow }): Promise<void>;
  /** The call with that key, or the run's call at `seq`; with `approval_status`, only while its approval is in that status. */
  agentToolCallUpdate(
    p: ({ external_idempotency_key: string } | { run_id: string; seq: number }) & {
      change: AgentToolCallChange;
      at: number;
      approval_status?: ApprovalStatus;
    },
  ): Promise<boolean>;
  /** By id, or by external idempotency key. */
  agentToolCallGet(p: { id?: string; external_idempotency_key?: string }): Promise<AgentToolCallRow | undefined>;
  /** A run's calls in the order they were made, or calls by approval status (oldest first). */
  agentToolCallList(p: {
    run_id?: string;
    approval_status?: ApprovalStatus;
    limit: number;
    after?: string;
  }): Promise<AgentToolCallRow[]>;
  agentCheckpointPut(p: { checkpoint: AgentCheckpointRow }): Promise<void>;
  /** In the run's order (seq). */
  agentCheckpointList(p: { run_id: string }): Promise<AgentCheckpointRow[]>;
  /**
   * Deletes runs whole from every ledger table (retention): their steps, tool calls, checkpoints,
   * `agent_runs` rows, and the events they handle that no remaining run starts from. Returns the rows deleted.
   */
  agentRunDelete(p: { ids: string[] }): Promise<{ rows: number }>;
}
