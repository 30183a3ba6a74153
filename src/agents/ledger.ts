import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { iso } from '../iso.js';
import { checkName } from '../json.js';
import type {
  AgentCheckpointRow,
  AgentEventRow,
  AgentEventStatus,
  AgentRunRow,
  AgentStepRow,
  AgentToolCallRow,
  ApprovalStatus,
} from '../storage/ledger.js';
import { readRunView } from '../runtime/read/view.js';
import type { Store } from '../storage/store.js';
import { Intake, type AgentEventInput, type IntakeResult } from './intake.js';
import { approvalSignal, type Decision } from './ledger-context.js';
import { REMOTE_EVENT, remoteStream } from './remote-events.js';
import { agentRunRetry } from './run-retry.js';
import type { SessionService } from './service.js';
import { SESSION_WORKFLOW } from './session.js';

// the ledger is the feature's door: the intake's shapes are named from here too (index.ts, the client)
export type { AgentEventInput, IntakeResult } from './intake.js';

type Iso<T, K extends keyof T> = Omit<T, K> & { [P in K]: T[P] extends number ? string : string | null };

export type AgentEventRecord = Iso<AgentEventRow, 'available_at' | 'created_at' | 'updated_at'>;
export type AgentRunRecord = Iso<AgentRunRow, 'started_at' | 'ended_at' | 'created_at' | 'updated_at'>;
export type AgentStepRecord = Iso<AgentStepRow, 'created_at' | 'updated_at'>;
export type AgentToolCallRecord = Iso<
  AgentToolCallRow,
  'started_at' | 'ended_at' | 'approval_expires_at' | 'decided_at' | 'created_at' | 'updated_at'
>;
export type AgentCheckpointRecord = Iso<AgentCheckpointRow, 'created_at'>;

export interface AgentRunDetail extends AgentRunRecord {
  /** Why its run is held back (`debounced until …`, `concurrency …`, `budget: …`), as the run shows it; else null. */
  waiting_for: string | null;
  events: AgentEventRecord[];
  steps: AgentStepRecord[];
  tool_calls: AgentToolCallRecord[];
  checkpoints: AgentCheckpointRecord[];
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

const EVENT_STATUSES: AgentEventStatus[] = ['pending', 'processing', 'done', 'failed'];
const RUN_STATUSES = ['pending', 'running', 'waiting', 'sleeping', 'success', 'failed'];

/**
 * The agent run ledger: inbound events (intake), the runs they start (sessions whose run takes its
 * conversation's turn), and their steps, tool calls, checkpoints and approvals, read from the
 * ledger's tables. Every write goes through the journal; the tables are its projections.
 *
 * @example
 * const ledger = new AgentLedger(engine, store, service, { defaultAgent: 'sample-agent' });
 * const { run_id } = await ledger.intake({ conversation_id: 'c-1', user_id: 'u-1', source: 'whatsapp_webhook', input_type: 'text', payload: { text: 'refund #7' }, idempotency_key: 'wamid.1' });
 * const pending = await ledger.approvals({ status: 'pending' });
 * await ledger.decide(pending.items[0]!.id, 'approved', { by: 'ana' });
 */
export class AgentLedger {
  private readonly inbound: Intake;

  constructor(
    private readonly engine: Engine,
    private readonly store: Store,
    private readonly sessions: SessionService,
    options: { defaultAgent: string },
  ) {
    this.inbound = new Intake(engine, store, sessions, options.defaultAgent);
    // the operator's retry of an agent run is this ledger's redrive of its event
    engine.operator.retryThrough(
      SESSION_WORKFLOW,
      agentRunRetry(store, (id, actor) => this.redrive(id, actor)),
    );
  }

  /**
   * Receives an event, once per idempotency key: the first delivery writes the event and (unless it
   * joins a waiting run) starts its run, in one transaction; any later one, also concurrent, returns
   * the same ids with `duplicate: true` and writes nothing.
   */
  async intake(body: AgentEventInput): Promise<IntakeResult> {
    return this.inbound.receive(body);
  }

  async event(id: string): Promise<AgentEventRecord> {
    const row = await this.store.agentEventGet({ id });
    if (!row) throw new NotFoundError(`agent event ${id} not found`);
    return eventRecord(row);
  }

  /**
   * Inbound events, newest first (received time, then id), filtered; the cursor is the previous page's last event id.
   */
  async events(
    q: {
      status?: AgentEventStatus;
      conversation_id?: string;
      user_id?: string;
      source?: string;
      limit?: number;
      cursor?: string;
    } = {},
  ): Promise<Page<AgentEventRecord>> {
    if (q.status !== undefined && !EVENT_STATUSES.includes(q.status))
      throw new ValidationError(
        'status',
        `must be one of ${EVENT_STATUSES.join(', ')} (got ${JSON.stringify(q.status)})`,
      );
    // the page starts after the cursor's place in the order, so a cursor must be an event that exists
    if (q.cursor !== undefined && !(await this.store.agentEventGet({ id: q.cursor })))
      throw new ValidationError(
        'cursor',
        `'${q.cursor}' is not the next_cursor of a previous page (the id of an agent event)`,
      );
    const limit = q.limit ?? 50;
    const { cursor, ...filters } = q;
    const rows = await this.store.agentEventPage({
      ...filters,
      limit,
      ...(cursor !== undefined ? { after: cursor } : {}),
    });
    return { items: rows.map(eventRecord), next_cursor: rows.length === limit ? rows.at(-1)!.id : null };
  }

  /**
   * A failed event again: a new run handles it with a fresh attempt count, keeping the event's place
   * in its conversation (ahead of later arrivals not started yet; next, when a later one holds the
   * turn or ran); the old run and its rows stay, and the new run's `retry_of` names it. Journaled on
   * the event's key stream with who and why. An event that is not failed is a ConflictError. The
   * operator's retry of an agent run (`POST /operator/runs/retry`) is this.
   */
  async redrive(
    id: string,
    body: { by?: string; reason?: string | null } = {},
  ): Promise<{ event: AgentEventRecord; run_id: string; retry_of: string }> {
    const { run_id, retry_of } = await this.inbound.redrive(id, this.actor(body));
    return { event: await this.event(id), run_id, retry_of };
  }

  /**
   * Redrives every failed event the filter matches, oldest first (each new run takes its event's place in its
   * conversation).
   */
  async redriveAll(
    filter: { status: 'failed'; conversation_id?: string; source?: string },
    body: { by?: string; reason?: string | null } = {},
  ): Promise<{ redriven: number }> {
    if (filter.status !== 'failed')
      throw new ValidationError(
        'status',
        `must be failed (only a failed event can be redriven; got ${JSON.stringify(filter.status)})`,
      );
    this.actor(body);
    const ids: string[] = [];
    for (let cursor: string | undefined; ; ) {
      const page = await this.events({ ...filter, limit: 500, ...(cursor ? { cursor } : {}) });
      ids.push(...page.items.map((e) => e.id));
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    let redriven = 0;
    for (const id of ids.reverse()) {
      try {
        await this.redrive(id, body);
        redriven++;
      } catch (error) {
        // redriven meanwhile by someone else: not this call's
        if (!(error instanceof ConflictError)) throw error;
      }
    }
    return { redriven };
  }

  private actor(body: { by?: string; reason?: string | null }): { by: string; reason: string | null } {
    const given = body ?? {};
    const by = given.by === undefined ? 'api' : (checkName('by', given.by, 200) as string);
    const reason = given.reason ?? null;
    if (reason !== null && (typeof reason !== 'string' || reason.length > 2000))
      throw new ValidationError('reason', 'must be a string of at most 2000 characters');
    return { by, reason };
  }

  /** Runs, newest first (`order: 'asc'`: oldest first), filtered. */
  async runs(
    q: {
      conversation_id?: string;
      user_id?: string;
      status?: string;
      limit?: number;
      cursor?: string;
      order?: 'asc' | 'desc';
    } = {},
  ): Promise<Page<AgentRunRecord>> {
    if (q.status !== undefined && !RUN_STATUSES.includes(q.status))
      throw new ValidationError(
        'status',
        `must be one of ${RUN_STATUSES.join(', ')} (got ${JSON.stringify(q.status)})`,
      );
    const limit = q.limit ?? 50;
    const rows = await this.store.agentRunList({
      limit,
      ...(q.conversation_id !== undefined ? { conversation_id: q.conversation_id } : {}),
      ...(q.user_id !== undefined ? { user_id: q.user_id } : {}),
      ...(q.status !== undefined ? { status: q.status } : {}),
      ...(q.cursor !== undefined ? { after: q.cursor } : {}),
      order: q.order ?? 'desc',
    });
    return { items: rows.map(runRecord), next_cursor: rows.length === limit ? rows.at(-1)!.id : null };
  }

  /** One run with the events it handles and its steps, tool calls and checkpoints, in order. */
  async run(id: string): Promise<AgentRunDetail> {
    const store = this.store;
    const row = await store.agentRunGet({ id });
    if (!row) throw new NotFoundError(`agent run ${id} not found`);
    const [view, events, steps, calls, checkpoints] = await Promise.all([
      readRunView(store, id),
      store.agentEventList({ run_id: id }),
      store.agentStepList({ run_id: id }),
      store.agentToolCallList({ run_id: id, limit: 10_000 }),
      store.agentCheckpointList({ run_id: id }),
    ]);
    return {
      ...runRecord(row),
      waiting_for: view?.waitingFor ?? null,
      events: events.map(eventRecord),
      steps: steps.map((s) => isoTimes(s, ['created_at', 'updated_at']) as AgentStepRecord),
      tool_calls: calls.map(callRecord),
      checkpoints: checkpoints.map((c) => isoTimes(c, ['created_at']) as AgentCheckpointRecord),
    };
  }

  /** Tool calls by approval status (`pending`: waiting for a person), oldest first. */
  async approvals(
    q: { status?: ApprovalStatus; limit?: number; cursor?: string } = {},
  ): Promise<Page<AgentToolCallRecord>> {
    const limit = q.limit ?? 50;
    const rows = await this.store.agentToolCallList({
      approval_status: q.status ?? 'pending',
      limit,
      ...(q.cursor !== undefined ? { after: q.cursor } : {}),
    });
    return { items: rows.map(callRecord), next_cursor: rows.length === limit ? rows.at(-1)!.id : null };
  }

  async toolCall(id: string): Promise<AgentToolCallRecord> {
    return callRecord(await this.call(id));
  }

  /**
   * A person's decision on a tool call waiting for approval. Repeating the decision is harmless
   * (`duplicate: true`); a different one, or any once the approval expired, is a ConflictError.
   */
  async decide(
    id: string,
    decision: 'approved' | 'rejected',
    body: { by: string; reason?: string | null },
  ): Promise<{ tool_call: AgentToolCallRecord; duplicate: boolean }> {
    const by = checkName('by', body?.by, 200);
    const reason = body.reason ?? null;
    if (reason !== null && (typeof reason !== 'string' || reason.length > 2000))
      throw new ValidationError('reason', 'must be a string of at most 2000 characters');
    const before = await this.call(id);
    if (before.approval_status === null)
      throw new ConflictError(`tool call ${id} (${before.tool_name}, ${before.risk_level} risk) needs no approval`);
    if (before.approval_status !== 'pending') return this.same(before, decision, true);
    const key = before.external_idempotency_key;
    const payload: Decision & { key: string } = { decision, by, reason, key };
    // the signal's fixed key lets one decision in; the projection records it on the call
    if (await this.remote(before.run_id)) {
      // an HTTP agent long-polls the call itself: a signal would wake the session's run for nothing
      await this.engine.journal.append(
        remoteStream(before.run_id),
        [{ type: REMOTE_EVENT.signalSent, data: { name: approvalSignal(key), payload } }],
        { idempotencyKey: `${before.run_id}:${approvalSignal(key)}` },
      );
    } else {
      await this.engine.signal(before.run_id, approvalSignal(key), payload, { idempotencyKey: approvalSignal(key) });
    }
    return this.same(await this.call(id), decision, false);
  }

  private same(
    call: AgentToolCallRow,
    decision: 'approved' | 'rejected',
    duplicate: boolean,
  ): { tool_call: AgentToolCallRecord; duplicate: boolean } {
    if (call.approval_status !== decision) {
      const who = call.approval_by ? ` by ${call.approval_by}` : '';
      throw new ConflictError(
        `tool call ${call.id} was already ${call.approval_status}${who}; it cannot be ${decision}`,
      );
    }
    return { tool_call: callRecord(call), duplicate };
  }

  /** Whether run `id` is a session of an HTTP agent (its calls are written through remote.ts). */
  private async remote(id: string): Promise<boolean> {
    const run = await this.store.agentRunGet({ id });
    return run !== undefined && this.sessions.agent(run.agent)?.kind === 'http';
  }

  private async call(id: string): Promise<AgentToolCallRow> {
    const row = await this.store.agentToolCallGet({ id });
    if (!row) throw new NotFoundError(`tool call ${id} not found`);
    return row;
  }
}

/** The row with its `keys` (times in ms) as ISO strings; a time not set is null. */
function isoTimes<T extends object>(row: T, keys: Array<keyof T>): Record<string, unknown> {
  const out = { ...row } as Record<string, unknown>;
  for (const k of keys) {
    const v = row[k] as unknown;
    out[k as string] = typeof v === 'number' ? iso(v) : null;
  }
  return out;
}

function eventRecord(row: AgentEventRow): AgentEventRecord {
  return isoTimes(row, ['available_at', 'created_at', 'updated_at']) as AgentEventRecord;
}

function runRecord(row: AgentRunRow): AgentRunRecord {
  return isoTimes(row, ['started_at', 'ended_at', 'created_at', 'updated_at']) as AgentRunRecord;
}

/** A tool call row with its times as ISO strings, as the API answers it. */
export function callRecord(row: AgentToolCallRow): AgentToolCallRecord {
  return isoTimes(row, [
    'started_at',
    'ended_at',
    'approval_expires_at',
    'decided_at',
    'created_at',
    'updated_at',
  ]) as AgentToolCallRecord;
}
