import type { AgentEventRow, AgentRunRow, AgentToolCallRow } from './ledger.js';
import type { NewTask } from './store.js';

/** A task to enqueue in the conformance tests: defaults for every field but the queue. */
export const task = (queue: string, over: Partial<NewTask> = {}): NewTask => ({
  id: `task_${Math.random().toString(36).slice(2)}`,
  queue,
  payload: { n: 1 },
  idempotencyKey: null,
  orderingKey: null,
  runAt: null,
  priority: 0,
  maxAttempts: 3,
  ...over,
});

/** An agent event row for the conformance tests: defaults for every field but the id. */
export const event = (id: string, over: Partial<AgentEventRow> = {}): AgentEventRow => ({
  id,
  conversation_id: 'c1',
  user_id: 'u1',
  source: 'whatsapp_webhook',
  input_type: 'text',
  payload: { text: 'hi', n: [1, 2] },
  idempotency_key: `key-${id}`,
  agent: 'sample-agent',
  run_id: `run-${id}`,
  decision: 'queued',
  status: 'pending',
  attempt_count: 0,
  available_at: 1000,
  last_error: null,
  created_at: 1000,
  updated_at: 1000,
  ...over,
});

/** An agent run row. */
export const run = (id: string, over: Partial<AgentRunRow> = {}): AgentRunRow => ({
  id,
  event_id: null,
  conversation_id: 'c1',
  user_id: 'u1',
  agent: 'sample-agent',
  status: 'pending',
  graph_version: 'v1',
  input_class: 'text',
  started_at: null,
  ended_at: null,
  failure_reason: null,
  retry_of: null,
  created_at: 1000,
  updated_at: 1000,
  ...over,
});

/** A tool call row of run `runId`, blocked on a pending approval. */
export const call = (id: string, runId: string, over: Partial<AgentToolCallRow> = {}): AgentToolCallRow => ({
  id,
  run_id: runId,
  external_idempotency_key: `${runId}:act:issue_refund#${id}`,
  node: 'act',
  seq: null,
  tool_name: 'issue_refund',
  risk_level: 'high',
  input: { order: 'o-1', amount: 5 },
  output: null,
  status: 'blocked',
  error: null,
  attempts: 0,
  started_at: null,
  ended_at: null,
  approval_status: 'pending',
  approval_by: null,
  approval_reason: null,
  approval_expires_at: 5000,
  decided_at: null,
  created_at: 1000,
  updated_at: 1000,
  ...over,
});
