import type {
  AgentCheckpointRecord,
  AgentEventRecord,
  AgentRunRecord,
  AgentStepRecord,
  AgentToolCallRecord,
} from './ledger.js';

// The 003 brief's contract names ("Contratos TypeScript") for the records the ledger's API answers;
// aliases, so the ledger keeps one definition of each shape and these can never drift from it.

/**
 * An inbound event as `GET /agent/events/{id}` answers it: its conversation, source, payload,
 * status (`pending`, `processing`, `done`, `failed`), attempts and the run it started or joined.
 *
 * @example
 * const event: AgentEvent = await client.agentEvent('evt_…');
 * if (event.status === 'failed') console.log(event.last_error);
 */
export type AgentEvent = AgentEventRecord;

/**
 * A run of an agent as `GET /agent/runs` lists it: its conversation, status, times and why it failed.
 * `GET /agent/runs/{id}` answers an `AgentRunDetail`: this and its events, steps, tool calls and checkpoints.
 *
 * @example
 * const { runs } = await client.agentRuns({ conversation_id: 'c-1' });
 * const run: AgentRun = runs[0]!;
 */
export type AgentRun = AgentRunRecord;

/**
 * A step (node) of an agent run, with its input and output snapshots, status and latency.
 *
 * @example
 * const steps: AgentStep[] = (await client.agentRun(runId)).steps;
 */
export type AgentStep = AgentStepRecord;

/**
 * A tool call of an agent run: its tool, input, output, risk, attempts and approval.
 *
 * @example
 * const waiting: AgentToolCall[] = (await client.approvals({ status: 'pending' })).tool_calls;
 */
export type AgentToolCall = AgentToolCallRecord;

/**
 * A checkpoint of an agent run: the state a node saved, from which the run resumes.
 *
 * @example
 * const last: AgentCheckpoint | undefined = (await client.agentRun(runId)).checkpoints.at(-1);
 */
export type AgentCheckpoint = AgentCheckpointRecord;
