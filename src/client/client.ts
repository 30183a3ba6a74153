import { Transport } from './transport.js';
import type {
  DeadTask,
  ExecutionRecord,
  ExecutionStatus,
  ExecutionSummary,
  FunctionRecord,
  FunctionStarted,
  RunEvent,
  RunRecord,
  RunSummary,
  TaskRecord,
} from './records.js';
import type { Message, PostInput } from '../chat/message.js';
import type { EventView } from '../triggers/events.js';
import type { StoredWorkflow } from '../workflows/definitions.js';
import type { FlowOptions } from '../runtime/flow.js';
import type { FunctionRegistration } from '../functions/functions.js';
import type { FlowRecord } from './flow.js';
import type { LimitDefinition, LimitRecord } from './limits.js';
import type { KeyRecord, KeyWithSecret, NewKeyRequest } from './keys.js';
import type {
  AgentEventInput,
  AgentEventRecord,
  AgentRunDetail,
  AgentRunRecord,
  AgentToolCallRecord,
  IntakeResult,
} from '../agents/ledger.js';
import type { StoreStatus } from '../runtime/operate/operator.js';
import type { RunDiffRecord } from '../server/records/run-diff.js';
import type { Duration } from '../duration.js';
import {
  type ClaimedTask,
  type Enqueued,
  type EnqueueTaskOptions,
  newTask,
  PROTOCOL,
  type ProtocolTask,
} from './protocol.js';

export type { ClaimedTask, Enqueued, EnqueueTaskOptions, ProtocolTask } from './protocol.js';
// the API's records, named in records.ts (a list of types and nothing else)
export type * from './records.js';
export { RemoteWorker, type RemoteWorkerOptions } from './remote-worker.js';
export { ApiError, UnreachableError } from './errors.js';

/**
 * A typed client of the runledger HTTP API (what the CLI uses).
 *
 * @example
 * const client = new Client({ url: 'http://127.0.0.1:8080' });
 * const { execution_id } = await client.execute('wf_01J…', { trigger_data: { name: 'Ada' } });
 */
export class Client extends Transport {
  createWorkflow = (definition: unknown) => this.call<StoredWorkflow>('POST', '/workflows', definition);
  updateWorkflow = (id: string, definition: unknown) =>
    this.call<StoredWorkflow>('PUT', `/workflows/${enc(id)}`, definition);
  deleteWorkflow = (id: string) => this.call<null>('DELETE', `/workflows/${enc(id)}`);
  workflow = (id: string) => this.call<StoredWorkflow>('GET', `/workflows/${enc(id)}`);
  workflows = (page: { limit?: number; last_key?: string } = {}) =>
    this.call<{ workflows: StoredWorkflow[]; count: number; last_key: string | null }>(
      'GET',
      `/workflows${query(page)}`,
    );

  /** Starts an execution; the same `idempotencyKey` again starts nothing and answers the first one as it is now (`duplicate: true`). */
  execute(
    id: string,
    /** `priority`: over the workflow's (-100…100); higher executions start first. */
    request: { trigger_data?: unknown; trigger_type?: string; priority?: number } = {},
    options: { idempotencyKey?: string } = {},
  ) {
    const headers: Record<string, string> = options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {};
    return this.call<{
      execution_id: string;
      workflow_id: string;
      workflow_version: number;
      status: ExecutionStatus;
      duplicate: boolean;
    }>('POST', `/workflows/${enc(id)}/execute`, request, headers);
  }
  executions = (id: string, page: { limit?: number; last_key?: string } = {}) =>
    this.call<{ executions: ExecutionSummary[]; count: number; last_key: string | null }>(
      'GET',
      `/workflows/${enc(id)}/executions${query(page)}`,
    );
  execution = (id: string, executionId: string) =>
    this.call<ExecutionRecord>('GET', `/workflows/${enc(id)}/executions/${enc(executionId)}`);
  /** Cancels an execution; `delete_artifacts`: its compensations read `{{cancel.delete_artifacts}}` as true. */
  cancel = (id: string, executionId: string, reason?: string, options: { delete_artifacts?: boolean } = {}) =>
    this.call<{ execution_id: string }>('POST', `/workflows/${enc(id)}/executions/${enc(executionId)}/cancel`, {
      ...(reason === undefined ? {} : { reason }),
      ...(options.delete_artifacts ? { delete_artifacts: true } : {}),
    });
  /** Retries the failed branches (all, or those named) as a new execution reusing what succeeded. */
  retry = (id: string, executionId: string, branches?: string[]) =>
    this.call<{ execution_id: string; branches: string[] }>(
      'POST',
      `/workflows/${enc(id)}/executions/${enc(executionId)}/retry`,
      branches ? { branches } : {},
    );
  /** A new execution reusing the recorded outputs of the steps before `from_step`. */
  rerun = (
    id: string,
    executionId: string,
    request: {
      from_step?: string;
      trigger_data?: Record<string, unknown>;
      timeouts?: Record<string, string | number>;
    } = {},
  ) =>
    this.call<{ execution_id: string }>('POST', `/workflows/${enc(id)}/executions/${enc(executionId)}/rerun`, request);

  /** Registers a function endpoint (a version of it); `secret` is in the answer only when the server generated it. */
  registerFunction = (registration: FunctionRegistration) =>
    this.call<FunctionRecord & { secret?: string }>('POST', '/functions', registration);
  functions = () => this.call<{ functions: FunctionRecord[] }>('GET', '/functions');
  function = (name: string) => this.call<FunctionRecord>('GET', `/functions/${enc(name)}`);
  /** Deletes a function and its versions: its runs fail at their next call. */
  deleteFunction = (name: string) => this.call<null>('DELETE', `/functions/${enc(name)}`);
  /** Starts a run of the function's newest version; the same `id` again starts nothing and answers that run. */
  startFunction = (name: string, input?: unknown, options: { id?: string } = {}) =>
    this.call<FunctionStarted>('POST', `/functions/${enc(name)}/runs`, {
      ...(input === undefined ? {} : { input }),
      ...(options.id ? { id: options.id } : {}),
    });

  /**
   * Creates or changes a named rate limit (steps take it with `rateLimit`); a change applies at once.
   *
   * @example await client.setLimit({ name: 'openai', limit: 500, period: '1m' })
   */
  setLimit = (definition: LimitDefinition) => this.call<LimitRecord>('POST', '/limits', definition);
  limits = () => this.call<{ limits: LimitRecord[] }>('GET', '/limits');
  limit = (name: string) => this.call<LimitRecord>('GET', `/limits/${enc(name)}`);
  /**
   * Creates an API key (admin); its `secret` is in this answer only.
   *
   * @example const { secret } = await client.createKey({ name: 'ci', roles: ['worker'] })
   */
  createKey = (key: NewKeyRequest) => this.call<KeyWithSecret>('POST', '/keys', key);
  keys = () => this.call<{ keys: KeyRecord[] }>('GET', '/keys');
  /** A new secret for the key (in this answer only); the old one stops working. */
  rotateKey = (id: string) => this.call<KeyWithSecret>('POST', `/keys/${enc(id)}/rotate`);
  /** Revokes the key: it stops working; it stays listed as revoked. */
  revokeKey = (id: string) => this.call<KeyRecord>('DELETE', `/keys/${enc(id)}`);
  /** Deletes a named rate limit: steps naming it fail at their next take. */
  deleteLimit = (name: string) => this.call<null>('DELETE', `/limits/${enc(name)}`);
  /**
   * The limits in force: concurrency keys with runs in or waiting, and the named rate limits.
   *
   * @example (await client.flow()).concurrency[0] // { key: 'checkout:42', limit: 1, in_use: 1, waiting: 2, ... }
   */
  flow = () => this.call<FlowRecord>('GET', '/flow');

  setSecret = (name: string, value: string) => this.call<{ name: string }>('POST', '/secrets', { name, value });
  secrets = () => this.call<{ secrets: { name: string; created_at: string; updated_at: string }[] }>('GET', '/secrets');

  sendEvent = (envelope: Record<string, unknown>) =>
    this.call<EventView & { duplicate: boolean }>('POST', '/events', envelope);
  event = (id: string) => this.call<EventView>('GET', `/events/${enc(id)}`);

  postMessage = (channel: string, body: PostInput) =>
    this.call<Message>('POST', `/channels/${enc(channel)}/messages`, body);
  /** The WebSocket URL of a channel, with the token as a query parameter when there is one. */
  channelSocket = (channel: string, after: number) =>
    `${this.url.replace(/^http/, 'ws')}/channels/${enc(channel)}/ws?after=${after}${this.options.token ? `&token=${enc(this.options.token)}` : ''}`;

  sendAgentEvent = (event: AgentEventInput) => this.call<IntakeResult>('POST', '/agent/events', event);
  agentEvent = (id: string) => this.call<AgentEventRecord>('GET', `/agent/events/${enc(id)}`);
  agentEvents = (
    q: {
      status?: string;
      conversation_id?: string;
      user_id?: string;
      source?: string;
      limit?: number;
      cursor?: string;
    } = {},
  ) => this.call<{ events: AgentEventRecord[]; next_cursor: string | null }>('GET', `/agent/events${query(q)}`);
  redriveAgentEvent = (id: string, body: { by?: string; reason?: string } = {}) =>
    this.call<{ event: AgentEventRecord; run_id: string; retry_of: string }>(
      'POST',
      `/agent/events/${enc(id)}/redrive`,
      body,
    );
  agentRuns = (
    q: { conversation_id?: string; user_id?: string; status?: string; limit?: number; cursor?: string } = {},
  ) => this.call<{ runs: AgentRunRecord[]; next_cursor: string | null }>('GET', `/agent/runs${query(q)}`);
  agentRun = (id: string) => this.call<AgentRunDetail>('GET', `/agent/runs/${enc(id)}`);
  conversationRuns = (id: string, q: { limit?: number; cursor?: string } = {}) =>
    this.call<{ runs: AgentRunRecord[]; next_cursor: string | null }>(
      'GET',
      `/conversations/${enc(id)}/runs${query(q)}`,
    );
  approvals = (q: { status?: string; limit?: number; cursor?: string } = {}) =>
    this.call<{ tool_calls: AgentToolCallRecord[]; next_cursor: string | null }>('GET', `/agent/approvals${query(q)}`);
  decide = (id: string, decision: 'approve' | 'reject', body: { by: string; reason?: string }) =>
    this.call<{ tool_call: AgentToolCallRecord; duplicate: boolean }>(
      'POST',
      `/agent/tool-calls/${enc(id)}/${decision}`,
      body,
    );
  status = () => this.call<StoreStatus>('GET', '/status');
  runs = (q: { status?: string; workflow?: string; limit?: number; last_key?: string } = {}) =>
    this.call<{ runs: RunSummary[]; count: number; last_key: string | null }>('GET', `/runs${query(q)}`);
  run = (id: string) => this.call<RunRecord>('GET', `/runs/${enc(id)}`);
  runDiff = (a: string, b: string) => this.call<RunDiffRecord>('GET', `/runs/${enc(a)}/diff/${enc(b)}`);
  runEvents = (id: string, q: { after?: number; limit?: number } = {}) =>
    this.call<{ events: RunEvent[]; next_after: number | null }>('GET', `/runs/${enc(id)}/events${query(q)}`);
  /**
   * Starts a run of a code workflow registered with the server; the same `id` or `idempotencyKey` again returns that
   * run. Flow options (docs/flow-control.md) replace the workflow's own, field by field.
   *
   * @example await client.startRun('chat', { user: 'ada' }, { priority: 5, concurrency: [{ key: 'input.user', limit: 1 }] })
   */
  startRun(workflow: string, input: unknown, options: { id?: string; idempotencyKey?: string } & FlowOptions = {}) {
    const { id, idempotencyKey, ...flow } = options;
    const headers: Record<string, string> = idempotencyKey ? { 'idempotency-key': idempotencyKey } : {};
    return this.call<{ run_id: string; workflow: string; status: string; duplicate: boolean }>(
      'POST',
      '/runs',
      { workflow, input, ...(id ? { id } : {}), ...(snakeKeys(flow) as object) },
      headers,
    );
  }
  signalRun = (id: string, name: string, payload: unknown, idempotencyKey?: string) =>
    this.call<{ run_id: string; name: string }>('POST', `/runs/${enc(id)}/signal`, {
      name,
      payload,
      ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}),
    });
  /** Cancels a run of any kind (code run, execution, session); `reason` is journaled with the request and shown. */
  cancelRun = (id: string, reason?: string) =>
    this.call<{ run_id: string; status: 'cancelling' }>(
      'POST',
      `/runs/${enc(id)}/cancel`,
      reason === undefined ? undefined : { reason },
    );
  /**
   * Lets a run waiting for its budget go on (`extend`: what to add; default: its budget again), or fails it.
   *
   * @example await client.decideBudget('run_…', 'approve', { by: 'ana', extend: { tokens: 10_000 } });
   */
  decideBudget = (
    id: string,
    decision: 'approve' | 'reject',
    body: {
      by: string;
      extend?: { tokens?: number; cost?: number; tool_calls?: number; steps?: number; wall_time?: number | string };
    },
  ) =>
    this.call<{ run_id: string; decision: 'approve' | 'reject'; round: number; reason: string }>(
      'POST',
      `/runs/${enc(id)}/budget/${decision}`,
      decision === 'reject' ? { by: body.by } : body,
    );
  /**
   * Decides the effect step with an unknown outcome a run waits on (`effect: { atMostOnce: true }`): it `happened`
   * (with the step's `output`), run it `again`, or `fail` it.
   *
   * @example await client.decideEffect('run_…', { decision: 'happened', by: 'ana', output: { charge: 'ch_1' } });
   */
  decideEffect = (id: string, body: { decision: 'happened' | 'again' | 'fail'; by: string; output?: unknown }) =>
    this.call<{ run_id: string; decision: string; seq: number | string; name: string; attempt: number }>(
      'POST',
      `/runs/${enc(id)}/effect/decide`,
      body,
    );
  tasks = (q: { queue?: string; state?: string; limit?: number; last_key?: string } = {}) =>
    this.call<{ tasks: TaskRecord[]; count: number; last_key: string | null }>('GET', `/tasks${query(q)}`);
  taskEvents = (id: string) => this.call<{ events: RunEvent[] }>('GET', `/tasks/${enc(id)}/events`);
  subscriptions = () =>
    this.call<{
      subscriptions: Array<
        { name: string; cursor: string; blocked_reason?: string | null; parked?: number } & Record<string, unknown>
      >;
    }>('GET', '/subscriptions');

  dead = (page: { limit?: number; last_key?: string; queue?: string } = {}) =>
    this.call<{ tasks: DeadTask[]; count: number; last_key: string | null }>('GET', `/dlq${query(page)}`);
  redrive = (id: string) =>
    this.call<{ id: string; state: string; redriven: boolean }>('POST', `/dlq/${enc(id)}/redrive`);
  /** The queue's limit of running tasks across every worker (`concurrency: null`: none). */
  queueLimit = (queue: string) =>
    this.call<{ queue: string; concurrency: number | null }>('GET', `/queues/${enc(queue)}/limit`);
  /** Sets the queue's limit of running tasks (null removes it); the next claim obeys it. */
  setQueueLimit = (queue: string, concurrency: number | null) =>
    this.call<{ queue: string; concurrency: number | null }>('PUT', `/queues/${enc(queue)}/limit`, { concurrency });
  /** Enqueues a task on `queue` (task protocol: docs/protocol.md); a repeated `idempotencyKey` answers the first task, `created: false`. */
  enqueueTask = (queue: string, payload: unknown, options: EnqueueTaskOptions = {}) =>
    this.call<Enqueued>('POST', `/queues/${enc(queue)}/tasks`, { payload, ...newTask(options) }, PROTOCOL);
  /** Enqueues up to 1000 tasks at once, all or nothing; answers in order. */
  enqueueTasks = (queue: string, items: Array<EnqueueTaskOptions & { payload: unknown }>) =>
    this.call<{ tasks: Enqueued[] }>(
      'POST',
      `/queues/${enc(queue)}/tasks`,
      { tasks: items.map(({ payload, ...o }) => ({ payload, ...newTask(o) })) },
      PROTOCOL,
    );
  /**
   * Claims up to `max` ready tasks of `queue` for `worker`, each with the lease token its
   * heartbeat, completion or failure must carry; waits up to `wait` (≤ 60 s) for one.
   *
   * @example const [task] = await client.claimTasks('email', { worker: 'mailer-1', wait: '20s' });
   */
  async claimTasks(
    queue: string,
    c: { worker: string; max?: number; wait?: Duration; lease?: Duration },
    signal?: AbortSignal,
  ): Promise<ClaimedTask[]> {
    return (await this.call<{ tasks: ClaimedTask[] }>('POST', `/queues/${enc(queue)}/claim`, c, PROTOCOL, signal))
      .tasks;
  }
  /** Extends a claimed task's lease; ApiError 409 `lease_lost` when the token no longer holds it (stop working on it). */
  heartbeatTask = (id: string, leaseToken: string, lease?: Duration) =>
    this.call<{ lease_expires_at: string }>(
      'POST',
      `/tasks/${enc(id)}/heartbeat`,
      { lease_token: leaseToken, ...(lease === undefined ? {} : { lease }) },
      PROTOCOL,
    );
  completeTask = (id: string, leaseToken: string, result?: unknown) =>
    this.call<{ task: ProtocolTask }>(
      'POST',
      `/tasks/${enc(id)}/complete`,
      { lease_token: leaseToken, result: result ?? null },
      PROTOCOL,
    );
  /** Completes many claimed tasks in one request, each fenced on its own: every item's task, or its error (`lease_lost`, `not_found`). */
  completeTasks = (items: Array<{ id: string; leaseToken: string; result?: unknown }>) =>
    this.call<{
      results: Array<{ id: string; task: ProtocolTask } | { id: string; error: { code: string; message: string } }>;
    }>(
      'POST',
      '/tasks/complete',
      { completions: items.map((i) => ({ id: i.id, lease_token: i.leaseToken, result: i.result ?? null })) },
      PROTOCOL,
    );
  /** Fails the attempt: retried after the queue's backoff (or `retryAfter`), dead when not `retryable` (default true) or out of attempts. */
  failTask = (id: string, leaseToken: string, f: { error: string; retryable?: boolean; retryAfter?: Duration }) =>
    this.call<{ task: ProtocolTask }>(
      'POST',
      `/tasks/${enc(id)}/fail`,
      {
        lease_token: leaseToken,
        error: f.error,
        ...(f.retryable === undefined ? {} : { retryable: f.retryable }),
        ...(f.retryAfter === undefined ? {} : { retry_after: f.retryAfter }),
      },
      PROTOCOL,
    );

  /** Operator actions (`/operator/…`): each journaled with `by` and `reason`. */
  operator = <T = Record<string, unknown>>(
    action: 'pause' | 'resume' | 'runs/cancel' | 'runs/retry' | 'tasks/redrive',
    body: Record<string, unknown>,
  ) => this.call<T>('POST', `/operator/${action}`, body);
  pauses = () =>
    this.call<{ pauses: Array<{ kind: string; name: string; paused_by: string; reason: string; paused_at: string }> }>(
      'GET',
      '/operator/pauses',
    );
  runsNeedingPatch = (id: string, q: { workflow?: string } = {}) =>
    this.call<{ runs: RunSummary[] }>('GET', `/operator/patches/${enc(id)}/runs${query(q)}`);
}

const enc = encodeURIComponent;

function query(params: Record<string, string | number | undefined>): string {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined) as [string, string | number][];
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries.map(([k, v]) => [k, String(v)]))}`;
}

/** Flow options as the API spells them (`fairBy` → `fair_by`); keys and values are kept as they are. */
function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), snakeKeys(v)]),
  );
}
