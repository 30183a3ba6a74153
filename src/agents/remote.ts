import { toMs, type Duration } from '../duration.js';
import type { Engine } from '../engine.js';
import { ConflictError, LeaseLostError, NotFoundError, ValidationError } from '../errors.js';
import { checkJson, checkName } from '../json.js';
import { FALLBACK_MS } from '../runtime/read/runs.js';
import type { AgentToolCallRow, RiskLevel } from '../storage/ledger.js';
import type { NewEvent, Store } from '../storage/store.js';
import { approvalSignal, type ToolCallInput } from './ledger-context.js';
import { isEnded } from './lifecycle.js';
import { REMOTE_EVENT, remoteStream } from './remote-events.js';
import { remoteState, type RemoteState } from './remote-state.js';
import type { SessionService } from './service.js';
import { readSession } from './view.js';

/**
 * Ledger writes of out-of-process (HTTP) agents: nodes, checkpoints, tool calls (with approvals),
 * lifecycle events and progress, each fenced by the lease token of the session's newest invocation
 * and journaled in `agent-remote:<session>` (remote-events.ts), whose events the ledger projection
 * turns into the same rows as an in-process agent's.
 *
 * @example
 * const remote = new RemoteLedger(engine, store, service);
 * const node = await remote.nodeStart('ses_1', { lease_token, name: 'classify' });
 * await remote.nodeEnd('ses_1', node.seq, { lease_token, output: { intent: 'refund' } });
 */
export class RemoteLedger {
  constructor(
    private readonly engine: Engine,
    private readonly store: Store,
    private readonly sessions: SessionService,
  ) {}

  async nodeStart(id: string, body: { lease_token: string; name: string; input?: unknown }): Promise<NodeRecord> {
    const name = checkNodeName(body.name, 'name');
    this.json('input', body.input);
    return this.write(id, body.lease_token, (s) => {
      const open = [...s.nodes.values()].find((n) => n.ended === null);
      if (open)
        throw new ConflictError(`node '${open.name}' (seq ${open.seq}) is still open: nodes do not nest; end it first`);
      const seq = s.seq + 1;
      const attempt = [...s.nodes.values()].filter((n) => n.name === name).length + 1;
      const node = { seq, name, attempt };
      return {
        events: [{ type: REMOTE_EVENT.nodeStarted, data: { ...node, input: body.input ?? null } }],
        result: { ...node, status: 'started' as const },
      };
    });
  }

  /** Ends open node `seq`: with `output` (its checkpoint), or failed with `error`. */
  async nodeEnd(
    id: string,
    seq: number,
    body: { lease_token: string; output?: unknown; error?: string },
  ): Promise<NodeRecord> {
    this.json('output', body.output);
    if (body.error !== undefined && body.output !== undefined)
      throw new ValidationError('error', 'a node ends with output or with error, not both');
    return this.write<NodeRecord>(id, body.lease_token, (s, now) => {
      const node = s.nodes.get(seq);
      if (!node) throw new NotFoundError(`session ${id} has no node ${seq}`);
      if (node.ended !== null)
        throw new ConflictError(`node '${node.name}' (seq ${seq}) has already ended (${node.ended})`);
      const base = { seq, name: node.name, attempt: node.attempt, latency_ms: Math.max(0, now - node.at) };
      if (body.error !== undefined)
        return {
          events: [{ type: REMOTE_EVENT.nodeFailed, data: { ...base, error: body.error, retryAt: null } }],
          result: { seq, name: node.name, attempt: node.attempt, status: 'error' },
        };
      return {
        events: [{ type: REMOTE_EVENT.nodeCompleted, data: { ...base, output: body.output ?? null } }],
        result: { seq, name: node.name, attempt: node.attempt, status: 'ok' },
      };
    });
  }

  /** A checkpoint of `state` in the open node (or in `node`, a node of the session, when none is open). */
  async checkpoint(
    id: string,
    body: { lease_token: string; state: unknown; node?: string },
  ): Promise<{ node: string; seq: number }> {
    if (body.state === undefined) throw new ValidationError('state', 'is required');
    this.json('state', body.state);
    return this.write(id, body.lease_token, (s) => {
      const nodes = [...s.nodes.values()];
      const node =
        body.node !== undefined
          ? nodes.filter((n) => n.name === body.node).at(-1)
          : nodes.find((n) => n.ended === null);
      if (!node)
        throw new ValidationError(
          'node',
          body.node === undefined
            ? 'is required when no node is open'
            : `no node of session ${id} is named ${JSON.stringify(body.node)}`,
        );
      // a position of its own: a checkpoint's seq is unique in the run (the node's end takes the node's)
      const at = { node: node.name, seq: s.seq + 1 };
      return { events: [{ type: REMOTE_EVENT.checkpoint, data: { ...at, state: body.state } }], result: at };
    });
  }

  /**
   * A tool call in the open node (if any). One that needs approval (default: risk high) is recorded
   * `blocked`: the agent long-polls `toolCall(…, wait)` for the decision and, once approved, runs
   * the tool and sends its result. Any other is recorded `started`.
   */
  async toolCallStart(
    id: string,
    body: {
      lease_token: string;
      tool: string;
      risk: RiskLevel;
      input?: unknown;
      approval?: boolean;
      approval_timeout?: Duration;
    },
  ): Promise<AgentToolCallRow> {
    const tool = checkNodeName(body.tool, 'tool');
    if (!['low', 'medium', 'high'].includes(body.risk))
      throw new ValidationError('risk', `must be low, medium or high (got ${JSON.stringify(body.risk)})`);
    this.json('input', body.input);
    const approval = body.approval ?? body.risk === 'high';
    const timeoutMs =
      body.approval_timeout === undefined ? 24 * 3600_000 : toMs(body.approval_timeout, 'approval_timeout');
    const key = await this.write(id, body.lease_token, (s) => {
      const node = [...s.nodes.values()].find((n) => n.ended === null)?.name ?? null;
      const n = (s.tools.get(`${node ?? '-'}:${tool}`) ?? 0) + 1;
      const call: ToolCallInput = {
        ledger: 'tool',
        key: `${id}:${node ?? '-'}:${tool}#${n}`,
        tool,
        risk: body.risk,
        node,
        input: body.input ?? null,
      };
      const seq = s.seq + 1;
      const data = approval
        ? { seq, name: `tool.request:${tool}`, attempt: 1, input: { ...call, approval_timeout_ms: timeoutMs } }
        : { seq, name: `tool:${tool}`, attempt: 1, input: call };
      return { events: [{ type: REMOTE_EVENT.stepStarted, data }], result: call.key };
    });
    return (await this.store.agentToolCallGet({ external_idempotency_key: key }))!;
  }

  /** The result of a started (or approved) call: `output`, or `error` (`timed_out`: the tool ran past its time). */
  async toolCallEnd(
    id: string,
    callId: string,
    body: { lease_token: string; output?: unknown; error?: string; timed_out?: boolean },
  ): Promise<AgentToolCallRow> {
    this.json('output', body.output);
    if (body.error !== undefined && body.output !== undefined)
      throw new ValidationError('error', 'a call ends with output or with error, not both');
    await this.write(id, body.lease_token, async (s) => {
      const call = await this.call(id, callId);
      if (call.approval_status === 'pending')
        throw new ConflictError(
          `tool call ${callId} (${call.tool_name}) waits for approval: poll it until it is decided`,
        );
      if (call.approval_status === 'rejected' || call.approval_status === 'expired')
        throw new ConflictError(`tool call ${callId} (${call.tool_name}) was ${call.approval_status}: it must not run`);
      if (call.status !== 'started' && call.status !== 'blocked')
        throw new ConflictError(`tool call ${callId} (${call.tool_name}) has already ended (${call.status})`);
      const name = `tool:${call.tool_name}`;
      const input: ToolCallInput = {
        ledger: 'tool',
        key: call.external_idempotency_key,
        tool: call.tool_name,
        risk: call.risk_level,
        node: call.node,
        input: call.input,
      };
      // an approved call starts when its result comes: the agent ran it after the decision
      const seq = call.seq ?? s.seq + 1;
      const events: NewEvent[] =
        call.seq === null ? [{ type: REMOTE_EVENT.stepStarted, data: { seq, name, attempt: 1, input } }] : [];
      if (body.error !== undefined)
        events.push({
          type: REMOTE_EVENT.stepFailed,
          data: { seq, name, attempt: 1, error: body.error, errorName: body.timed_out ? 'TimeoutError' : 'Error' },
        });
      else
        events.push({ type: REMOTE_EVENT.stepCompleted, data: { seq, name, attempt: 1, output: body.output ?? null } });
      return { events, result: null };
    });
    return this.call(id, callId);
  }

  /**
   * Tool call `callId` of session `id`; while its approval is pending, waits up to `waitMs` for the
   * decision, woken by the journal's wake-up for the session's remote stream. An approval past its
   * expiry is expired here (the in-process agent's wait times out the same way).
   */
  async toolCall(id: string, callId: string, waitMs = 0, signal?: AbortSignal): Promise<AgentToolCallRow> {
    const deadline = Date.now() + waitMs;
    const stream = remoteStream(id);
    const watch = await this.engine.journal.watch((s) => s === stream);
    const leave = () => watch.wakeup.wake();
    signal?.addEventListener('abort', leave);
    try {
      for (;;) {
        let call = await this.call(id, callId);
        if (
          call.approval_status === 'pending' &&
          call.approval_expires_at !== null &&
          call.approval_expires_at <= (await this.store.now())
        ) {
          const name = approvalSignal(call.external_idempotency_key);
          await this.engine.journal.append(stream, [{ type: REMOTE_EVENT.waitTimedOut, data: { name } }], {
            idempotencyKey: `${id}:${name}:expired`,
          });
          call = await this.call(id, callId);
        }
        const remaining = deadline - Date.now();
        if (call.approval_status !== 'pending' || remaining <= 0 || signal?.aborted) return call;
        const expiry = call.approval_expires_at === null ? remaining : call.approval_expires_at - Date.now() + 50;
        await watch.wakeup.wait(Math.max(1, Math.min(remaining, FALLBACK_MS, expiry)));
      }
    } finally {
      signal?.removeEventListener('abort', leave);
      await watch.stop();
    }
  }

  /**
   * A lifecycle event of the agent's own (brief 000). The server records the AGENT_* events up to
   * AGENT_BACKGROUND_TASK_STARTED when the agent acknowledges its invocation; the agent's are
   * journaled beside them with its own time, and an ending one is the session's report.
   */
  async lifecycle(
    id: string,
    body: { lease_token: string; status: AgentLifecycleStatus; error_message?: string | null },
  ): Promise<{ session_id: string; status: string; duplicate: boolean }> {
    if (!AGENT_STATUSES.includes(body.status))
      throw new ValidationError(
        'status',
        `must be one of ${AGENT_STATUSES.join(', ')} (got ${JSON.stringify(body.status)})`,
      );
    await this.write(id, body.lease_token, () => ({
      events: [
        { type: REMOTE_EVENT.lifecycle, data: { status: body.status, error_message: body.error_message ?? null } },
      ],
      result: null,
    }));
    if (body.status === 'AGENT_ENTRYPOINT_STARTED' || body.status === 'AGENT_BACKGROUND_TASK_STARTED') {
      const session = await this.sessions.get(id);
      return { session_id: id, status: session.status, duplicate: false };
    }
    const ok = body.status === 'AGENT_BACKGROUND_TASK_COMPLETED';
    const report = await this.sessions.report(id, {
      status: ok ? 'success' : 'failed',
      error_message: ok ? null : (body.error_message ?? `${body.status}`),
    });
    return { session_id: id, status: report.status, duplicate: report.duplicate };
  }

  async progress(
    id: string,
    body: { lease_token: string; percent?: number; label?: string },
  ): Promise<{ percent: number | null; label: string | null }> {
    if (body.percent === undefined && body.label === undefined)
      throw new ValidationError('percent', 'percent or label is required');
    const progress = { percent: body.percent ?? null, label: body.label ?? null };
    return this.write(id, body.lease_token, () => ({
      events: [{ type: REMOTE_EVENT.progress, data: progress }],
      result: progress,
    }));
  }

  /** The session's newest progress, or null. */
  async lastProgress(id: string): Promise<{ percent: number | null; label: string | null; at: string } | null> {
    const events = await this.engine.journal.readStream(remoteStream(id), { limit: 100_000 });
    const last = events.filter((e) => e.type === REMOTE_EVENT.progress).at(-1);
    return last
      ? {
          ...(last.data as { percent: number | null; label: string | null }),
          at: new Date(last.timestamp).toISOString(),
        }
      : null;
  }

  /**
   * Appends what `build` makes of the session's remote state, if `token` is its newest lease token
   * and the session has not ended. The append expects the version the state was read at, so a
   * write that raced a newer invocation (or another write) reads again: a superseded token then
   * gets LeaseLostError and nothing is written.
   */
  private async write<T>(
    id: string,
    token: string,
    build: (s: RemoteState, now: number) => Built<T> | Promise<Built<T>>,
  ): Promise<T> {
    if (typeof token !== 'string' || token.length === 0)
      throw new ValidationError('lease_token', 'is required (the lease_token of the invocation)');
    for (let attempt = 1; ; attempt++) {
      const session = await readSession(this.store, id);
      if (!session) throw new NotFoundError(`session ${id} not found`);
      const events = await this.engine.journal.readStream(remoteStream(id), { limit: 100_000 });
      const state = remoteState(events);
      if (state.token !== token)
        throw new LeaseLostError(
          `lease_token does not hold session ${id}: ${state.token === null ? 'it was never invoked over HTTP' : 'a newer invocation superseded it'}`,
        );
      if (isEnded(session.status))
        throw new ConflictError(`session ${id} has already ended (${session.status}): nothing more is written to it`);
      const { events: next, result } = await build(state, await this.store.now());
      try {
        await this.engine.journal.append(remoteStream(id), next, { expectedVersion: events.at(-1)?.version ?? 0 });
        return result;
      } catch (error) {
        if (!(error instanceof ConflictError) || attempt >= 20) throw error;
      }
    }
  }

  private async call(id: string, callId: string): Promise<AgentToolCallRow> {
    const call = await this.store.agentToolCallGet({ id: callId });
    if (!call || call.run_id !== id) throw new NotFoundError(`session ${id} has no tool call ${callId}`);
    return call;
  }

  private json(path: string, value: unknown): void {
    if (value !== undefined) checkJson(path, value, this.engine.config.maxPayloadBytes);
  }
}

export const AGENT_STATUSES = [
  'AGENT_ENTRYPOINT_STARTED',
  'AGENT_BACKGROUND_TASK_STARTED',
  'AGENT_BACKGROUND_TASK_COMPLETED',
  'AGENT_BACKGROUND_TASK_FAILED',
  'AGENT_ENTRYPOINT_FAILED',
] as const;
export type AgentLifecycleStatus = (typeof AGENT_STATUSES)[number];

export interface NodeRecord {
  seq: number;
  name: string;
  attempt: number;
  status: 'started' | 'ok' | 'error';
}

interface Built<T> {
  events: NewEvent[];
  result: T;
}

function checkNodeName(name: unknown, path: string): string {
  checkName(path, name, 100);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name as string))
    throw new ValidationError(
      path,
      `must be 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`,
    );
  return name as string;
}
