import type { EventRecord } from '../server/records/events.js';
import type { RunRecord, RunSummary } from '../server/records/runs.js';
import type { DeadTaskRecord, TaskListRecord } from '../server/records/tasks.js';
import type { ExecutionRecord, ExecutionStatus, ExecutionSummary, StepRecord } from '../workflows/record.js';

/*
 * The records the API answers, as runledger/client exports them (client.ts re-exports this file): types only, taken
 * from where the server builds them, so a field is added in one place. The dashboard imports them from here (type
 * only, nothing of the server reaches its bundle) rather than from client.ts, whose Node streams it does not have.
 */

export type { AgentCheckpoint, AgentEvent, AgentRun, AgentStep, AgentToolCall } from '../agents/contracts.js';
export type { AgentRunDetail } from '../agents/ledger.js';
export type { ExecutionRecord, ExecutionStatus, ExecutionSummary, RunRecord, RunSummary, StepRecord };

/** A task as GET /tasks lists it. */
export interface TaskRecord extends TaskListRecord {}

/** A run's (or a task's) journaled event as the API shows it; `data` is the event's own. */
export interface RunEvent extends Omit<EventRecord, 'data'> {
  // biome-ignore lint/suspicious/noExplicitAny: an event's data is whatever its writer journaled; callers read its fields
  data: Record<string, any>;
}

/** A dead task as GET /dlq lists it. */
export interface DeadTask extends DeadTaskRecord {}

/** A registered function as GET /functions/{name} answers it (never its secret); `version` is the one new runs start on. */
export interface FunctionRecord {
  name: string;
  version: string;
  url: string;
  versions: Array<{ version: string; url: string }>;
  timeout_ms: number;
  retries: number;
  created_at: string;
  updated_at: string;
}

/** What POST /functions/{name}/runs answers: the run, and the function's version it calls. */
export interface FunctionStarted {
  run_id: string;
  function: string;
  version: string;
}
