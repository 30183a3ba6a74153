import { newId } from '../ids.js';
import type { Journal, Projection } from '../journal/journal.js';
import type { AgentToolCallRow } from '../storage/ledger.js';
import { RUN_EVENT } from '../runtime/events.js';
import { approvalSignal, type Decision, type ToolCallInput } from './ledger-context.js';
import {
  agentEventTransitions,
  approvalTransitions,
  canMove,
  moveEvents,
  moveRun,
  toolCallTransitions,
} from './ledger-lifecycle.js';
import { asRunEvent, REMOTE_EVENT } from './remote-events.js';

/**
 * The ledger's rows of what a run does, in the transaction of each append: its nodes (steps and
 * checkpoints), tool calls and approval waits and decisions, from the run's own events and alike
 * from an HTTP agent's mirrored ones (remote-events.ts). Registered by `projectLedger`.
 */
export function projectLedgerSteps(journal: Journal): void {
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
      reconciled?: boolean;
      phase?: string;
      retryAt?: number | null;
      happened?: boolean | null;
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
      const status = d.reconciled ? 'reconciled' : 'ok';
      await tx.agentToolCallUpdate({
        run_id: id,
        seq: d.seq,
        change: { status, output: d.output ?? null, ended_at: at },
        at,
      });
      return;
    }
    // an effect tool's call with no recorded outcome (effects.ts): unknown until reconciled, run again, or failed
    if (event.type === RUN_EVENT.stepUnknown) {
      await tx.agentToolCallUpdate({ run_id: id, seq: d.seq, change: { status: 'unknown', ended_at: null }, at });
      // atMostOnce without reconcile: the run waits for a person's decision (no worker held), as for an approval
      if ((d as { waitsForPerson?: boolean }).waitsForPerson) await moveRun(tx, id, 'waiting', at);
      return;
    }
    if (event.type === RUN_EVENT.stepReconciled) {
      if ((d as { by?: string }).by !== 'reconcile') await moveRun(tx, id, 'running', at);
      return;
    }
    if (d.phase === 'reconcile' && d.retryAt !== null) {
      await tx.agentToolCallUpdate({ run_id: id, seq: d.seq, change: { error: d.error ?? null }, at });
      return;
    }
    await tx.agentToolCallUpdate({
      run_id: id,
      seq: d.seq,
      change: { status: d.errorName === 'TimeoutError' ? 'timeout' : 'error', error: d.error ?? null, ended_at: at },
      at,
    });
  };
  journal.project(
    [
      RUN_EVENT.stepStarted,
      RUN_EVENT.stepCompleted,
      RUN_EVENT.stepFailed,
      RUN_EVENT.stepUnknown,
      RUN_EVENT.stepReconciled,
    ],
    toolSteps,
  );

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

function newCall(runId: string, call: ToolCallInput, at: number, over: Partial<AgentToolCallRow>) {
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
