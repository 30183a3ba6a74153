import { newId } from '../ids.js';
import type { Journal, Projection } from '../journal/journal.js';
import type { AgentEventChange, AgentEventRow, AgentRunChange } from '../storage/ledger.js';
import type { Store } from '../storage/store.js';
import { CONVERSATION_VIEW, conversationStream, readConversation, type ConversationView } from './conversation.js';
import { WrittenViews } from '../journal/kept.js';
import { approvalSignal, type Decision, type ToolCallInput } from './ledger-context.js';
import {
  agentEventTransitions,
  agentRunTransitions,
  approvalTransitions,
  canMove,
  sources,
  toolCallTransitions,
  type AgentRunStatus,
} from './ledger-lifecycle.js';
import { RUN_EVENT } from '../runtime/events.js';
import { asRunEvent, REMOTE_EVENT } from './remote-events.js';

/** What `agent.event.received` carries: the event's row, as the intake decided it. */
export type ReceivedEvent = Pick<
  AgentEventRow,
  | 'id'
  | 'conversation_id'
  | 'user_id'
  | 'source'
  | 'input_type'
  | 'payload'
  | 'idempotency_key'
  | 'agent'
  | 'run_id'
  | 'decision'
>;

const ENDINGS: Record<string, 'success' | 'failed'> = {
  AGENT_BACKGROUND_TASK_COMPLETED: 'success',
  AGENT_BACKGROUND_TASK_FAILED: 'failed',
  AGENT_INVOCATION_FAILED: 'failed',
  AGENT_ENTRYPOINT_FAILED: 'failed',
  SESSION_TIMED_OUT: 'failed',
  SESSION_FAILED: 'failed',
};

const registered = new WeakSet<Journal>();

/**
 * Keeps the agent ledger's tables in step with the journal, in the transaction of each append:
 * the intake's events, the sessions' lifecycle, and the runs' nodes, tool steps and approval waits
 * and signals. Rows move only along the edges of `ledger-lifecycle.ts`.
 */
export function projectLedger(journal: Journal): void {
  if (registered.has(journal)) return;
  registered.add(journal);

  journal.project('agent.event.received', async (event, tx) => {
    const e = event.data as ReceivedEvent;
    await tx.agentEventPut({
      event: {
        ...e,
        status: 'pending',
        attempt_count: 0,
        available_at: event.timestamp,
        last_error: null,
        created_at: event.timestamp,
        updated_at: event.timestamp,
      },
    });
  });
  journal.project('agent.event.redriven', async (event, tx) => {
    const d = event.data as { event_id: string; run_id: string; retry_of: string };
    await tx.agentEventRedrive({ id: d.event_id, run_id: d.run_id, retry_of: d.retry_of, at: event.timestamp });
  });
  const conversations = new WrittenViews<ConversationView>();
  journal.project(
    ['agent.event.queued', 'agent.event.coalesced', 'agent.run.started', 'agent.run.ended'],
    async (event, tx) => {
      const conversationId = event.streamId.slice('agent-conversation:'.length);
      const view =
        conversations.take(tx, conversationId, event.version - 1) ?? (await readConversation(tx, conversationId));
      const { run_id, agent } = event.data as { run_id: string; agent: string };
      view.version = event.version;
      if (event.type === 'agent.event.queued') view.waiting[agent] = run_id;
      if ((event.type === 'agent.run.started' || event.type === 'agent.run.ended') && view.waiting[agent] === run_id)
        delete view.waiting[agent];
      if (event.type === 'agent.run.started') {
        await moveRun(tx, run_id, 'running', event.timestamp);
        await moveEvents(tx, run_id, 'processing', event.timestamp, { attempt_count: 1 });
      }
      await tx.projectionPut({ name: CONVERSATION_VIEW, key: conversationId, value: view });
      conversations.wrote(tx, conversationId, event.version, view);
    },
  );

  journal.project('SESSION_INITIATED', async (event, tx) => {
    const id = event.streamId.slice('session:'.length);
    const d = event.data as {
      agent: string;
      graph_version?: string;
      conversation_id?: string;
      user_id?: string;
      event_id?: string;
      input_class?: string;
    };
    const run = {
      id,
      event_id: d.event_id ?? null,
      conversation_id: d.conversation_id ?? null,
      user_id: d.user_id ?? null,
      agent: d.agent,
      status: 'pending',
      graph_version: d.graph_version ?? 'v1',
      input_class: d.input_class ?? 'session',
      started_at: null,
      ended_at: null,
      failure_reason: null,
      retry_of: null,
      created_at: event.timestamp,
      updated_at: event.timestamp,
    };
    await tx.agentRunPut({ run });
  });
  journal.project('AGENT_INVOCATION_STARTED', async (event, tx) => {
    const id = event.streamId.slice('session:'.length);
    await moveRun(tx, id, 'running', event.timestamp);
    await tx.agentRunUpdate({ id, change: { started_at: event.timestamp }, at: event.timestamp });
  });
  journal.project(Object.keys(ENDINGS), async (event, tx) => {
    const id = event.streamId.slice('session:'.length);
    const to = ENDINGS[event.type]!;
    const error = (event.data as { error_message?: string } | null)?.error_message ?? null;
    await moveRun(tx, id, to, event.timestamp, { ended_at: event.timestamp, failure_reason: error });
    await moveEvents(
      tx,
      id,
      to === 'success' ? 'done' : 'failed',
      event.timestamp,
      error === null ? {} : { last_error: error },
    );
    // a run that ends before its turn came (cancelled) stops taking coalesced events: the append moves the conversation's version, so an intake that read it as waiting retries
    const run = await tx.agentRunGet({ id });
    if (run?.conversation_id && (await readConversation(tx, run.conversation_id)).waiting[run.agent] === id) {
      await journal.append(
        conversationStream(run.conversation_id),
        [{ type: 'agent.run.ended', data: { run_id: id, agent: run.agent } }],
        { tx },
      );
    }
  });

  const nodes: Projection = async (event, tx) => {
    const id = event.streamId.slice('run:'.length);
    const d = event.data as {
      seq: number;
      name: string;
      attempt: number;
      input?: unknown;
      output?: unknown;
      skipped?: boolean;
      latency_ms?: number;
      error?: string;
      retryAt?: number | null;
    };
    const at = event.timestamp;
    if (event.type === RUN_EVENT.nodeStarted || d.skipped) {
      if (!(await tx.agentRunGet({ id }))) return;
      const status = d.skipped ? 'skipped' : 'started';
      await tx.agentStepPut({
        step: {
          id: newId('step'),
          run_id: id,
          node: d.name,
          seq: d.seq,
          attempt: d.attempt,
          status,
          input_snapshot: d.input ?? null,
          output_snapshot: null,
          error: null,
          latency_ms: d.skipped ? 0 : null,
          created_at: at,
          updated_at: at,
        },
      });
      if (d.skipped) return;
      await moveRun(tx, id, 'running', at);
      await moveEvents(tx, id, 'processing', at, { attempt_count: d.attempt });
      return;
    }
    if (event.type === RUN_EVENT.nodeCompleted) {
      const found = await tx.agentStepUpdate({
        run_id: id,
        seq: d.seq,
        attempt: d.attempt,
        change: { status: 'ok', output_snapshot: d.output ?? null, latency_ms: d.latency_ms ?? null },
        at,
      });
      if (found)
        await tx.agentCheckpointPut({
          checkpoint: {
            id: newId('ckpt'),
            run_id: id,
            node: d.name,
            seq: d.seq,
            state: d.output ?? null,
            created_at: at,
          },
        });
      return;
    }
    if (
      !(await tx.agentStepUpdate({
        run_id: id,
        seq: d.seq,
        attempt: d.attempt,
        change: { status: 'error', error: d.error ?? null },
        at,
      }))
    )
      return;
    if (d.retryAt) {
      await moveRun(tx, id, 'sleeping', at);
      // only the back-off edge: a failed event is pending again by a redrive alone
      await moveEvents(
        tx,
        id,
        'pending',
        at,
        { available_at: d.retryAt, last_error: d.error ?? null },
        agentEventTransitions.backOff.from,
      );
    } else {
      await tx.agentEventUpdate({ run_id: id, change: { last_error: d.error ?? null }, at });
    }
  };
  journal.project([RUN_EVENT.nodeStarted, RUN_EVENT.nodeCompleted, RUN_EVENT.nodeFailed], nodes);

  const toolSteps: Projection = async (event, tx) => {
    const d = event.data as {
      seq: number;
      name: string;
      attempt: number;
      input?: ToolCallInput & { approval_timeout_ms?: number };
      output?: unknown;
      error?: string;
      errorName?: string;
    };
    const request = d.name.startsWith('tool.request:');
    if (!request && !d.name.startsWith('tool:')) return;
    const id = event.streamId.slice('run:'.length);
    const at = event.timestamp;
    if (event.type === RUN_EVENT.stepStarted) {
      const call = d.input;
      if (call?.ledger !== 'tool') return;
      const existing = await tx.agentToolCallGet({ external_idempotency_key: call.key });
      if (request) {
        if (existing) return;
        const expires = at + (call.approval_timeout_ms ?? 0);
        await tx.agentToolCallPut({
          call: newCall(id, call, at, { status: 'blocked', approval_status: 'pending', approval_expires_at: expires }),
        });
        return;
      }
      if (!existing) {
        await tx.agentToolCallPut({
          call: newCall(id, call, at, { status: 'started', seq: d.seq, attempts: d.attempt, started_at: at }),
        });
      } else if (canMove(toolCallTransitions, existing.status, 'started')) {
        await tx.agentToolCallUpdate({
          external_idempotency_key: call.key,
          change: {
            status: 'started',
            seq: d.seq,
            attempts: d.attempt,
            started_at: existing.started_at ?? at,
            ended_at: null,
            error: null,
          },
          at,
        });
      }
      return;
    }
    if (request) return;
    if (event.type === RUN_EVENT.stepCompleted) {
      await tx.agentToolCallUpdate({
        run_id: id,
        seq: d.seq,
        change: { status: 'ok', output: d.output ?? null, ended_at: at },
        at,
      });
      return;
    }
    await tx.agentToolCallUpdate({
      run_id: id,
      seq: d.seq,
      change: { status: d.errorName === 'TimeoutError' ? 'timeout' : 'error', error: d.error ?? null, ended_at: at },
      at,
    });
  };
  journal.project([RUN_EVENT.stepStarted, RUN_EVENT.stepCompleted, RUN_EVENT.stepFailed], toolSteps);

  const approvals: Projection = async (event, tx) => {
    const d = event.data as { name: string; payload?: Decision & { key?: string } };
    if (!d.name.startsWith('approval:')) return;
    const id = event.streamId.slice('run:'.length);
    const at = event.timestamp;
    if (event.type === RUN_EVENT.waitStarted) return void (await moveRun(tx, id, 'waiting', at));
    if (event.type === RUN_EVENT.waitCompleted) return void (await moveRun(tx, id, 'running', at));
    if (event.type === RUN_EVENT.signalSent) {
      const decision = d.payload!;
      if (typeof decision?.key !== 'string') return;
      const to = decision.decision === 'approved' ? 'approved' : 'rejected';
      if (!canMove(approvalTransitions, 'pending', to)) return;
      const error =
        to === 'rejected' ? `rejected by ${decision.by}${decision.reason ? `: ${decision.reason}` : ''}` : null;
      await tx.agentToolCallUpdate({
        external_idempotency_key: decision.key,
        change: {
          approval_status: to,
          approval_by: decision.by,
          approval_reason: decision.reason,
          decided_at: at,
          ...(error ? { error } : {}),
        },
        at,
        approval_status: 'pending',
      });
      return;
    }
    // the wait timed out: the call's approval expired (the call is the run's pending one with this signal)
    const pending = await tx.agentToolCallList({ run_id: id, approval_status: 'pending', limit: 1000 });
    const call = pending.find((c) => approvalSignal(c.external_idempotency_key) === d.name);
    if (call) {
      await tx.agentToolCallUpdate({
        external_idempotency_key: call.external_idempotency_key,
        change: { approval_status: 'expired', error: 'approval expired', decided_at: at },
        at,
        approval_status: 'pending',
      });
    }
    await moveRun(tx, id, 'running', at);
  };
  journal.project(
    [RUN_EVENT.waitStarted, RUN_EVENT.waitCompleted, RUN_EVENT.waitTimedOut, RUN_EVENT.signalSent],
    approvals,
  );

  // an HTTP agent's nodes, tool calls and decisions (remote-events.ts): the same rows by the same code
  journal.project([REMOTE_EVENT.nodeStarted, REMOTE_EVENT.nodeCompleted, REMOTE_EVENT.nodeFailed], (event, tx) =>
    nodes(asRunEvent(event), tx),
  );
  journal.project([REMOTE_EVENT.stepStarted, REMOTE_EVENT.stepCompleted, REMOTE_EVENT.stepFailed], (event, tx) =>
    toolSteps(asRunEvent(event), tx),
  );
  journal.project([REMOTE_EVENT.signalSent, REMOTE_EVENT.waitTimedOut], (event, tx) =>
    approvals(asRunEvent(event), tx),
  );
  // a checkpoint an HTTP agent takes inside a node (in-process agents checkpoint when a node ends)
  journal.project(REMOTE_EVENT.checkpoint, async (event, tx) => {
    const id = asRunEvent(event).streamId.slice('run:'.length);
    const d = event.data as { node: string; seq: number; state: unknown };
    await tx.agentCheckpointPut({
      checkpoint: {
        id: newId('ckpt'),
        run_id: id,
        node: d.node,
        seq: d.seq,
        state: d.state ?? null,
        created_at: event.timestamp,
      },
    });
  });
}

function newCall(
  runId: string,
  call: ToolCallInput,
  at: number,
  over: Partial<import('../storage/ledger.js').AgentToolCallRow>,
) {
  return {
    id: newId('tc'),
    run_id: runId,
    external_idempotency_key: call.key,
    node: call.node,
    seq: null,
    tool_name: call.tool,
    risk_level: call.risk,
    input: call.input ?? null,
    output: null,
    status: 'started' as const,
    error: null,
    attempts: 0,
    started_at: null,
    ended_at: null,
    approval_status: null,
    approval_by: null,
    approval_reason: null,
    approval_expires_at: null,
    decided_at: null,
    created_at: at,
    updated_at: at,
    ...over,
  };
}

/** Moves the run to `to` when its lifecycle has that edge from where it is (one conditional update). */
async function moveRun(
  tx: Store,
  id: string,
  to: AgentRunStatus,
  at: number,
  change: AgentRunChange = {},
): Promise<void> {
  await tx.agentRunUpdate({ id, change: { ...change, status: to }, at, from: sources(agentRunTransitions, to) });
}

/** Moves the run's events to `to` where their lifecycle has that edge; the rest of `change` applies to all. */
async function moveEvents(
  tx: Store,
  runId: string,
  to: AgentEventRow['status'],
  at: number,
  change: AgentEventChange = {},
  from: readonly string[] = sources(agentEventTransitions, to),
): Promise<void> {
  await tx.agentEventUpdate({ run_id: runId, change: { ...change, status: to }, at, from: [...from] });
}
