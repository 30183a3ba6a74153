import type { ErrorClass } from './error-class.js';

/**
 * The engine's lifecycle events, one typed map. Logs, metrics and traces subscribe to it
 * (`engine.on(name, listener)`); modules emit here instead of logging ad hoc. Payloads carry only
 * ids, names and numbers: never inputs, outputs or secrets.
 */
export interface EngineEventMap {
  /** The first pass of a run began executing it (a pass that crashed before writing may report it again). */
  'run:start': { runId: string; workflow: string; kind: RunKind; traceId?: string };
  /** A run reached its end state, written by this process. */
  'run:end': {
    runId: string;
    workflow: string;
    kind: RunKind;
    outcome: RunOutcome;
    durationMs: number;
    /** With outcome `cancelled`: who asked, the engine enforcing a limit (`system`, brief 004 §9) or a user. */
    cancelledBy?: 'user' | 'system';
    traceId?: string;
  };
  /** One pass of a run in this process ended (completed, failed, or suspended to wait). */
  'run:pass': {
    runId: string;
    workflow: string;
    kind: RunKind;
    durationMs: number;
    outcome: RunOutcome | 'suspended' | 'aborted';
  };
  'step:complete': {
    runId: string;
    workflow: string;
    step: string;
    attempt: number;
    durationMs: number;
    traceId?: string;
  };
  'step:fail': {
    runId: string;
    workflow: string;
    step: string;
    attempt: number;
    durationMs: number;
    error: string;
    willRetry: boolean;
    /** What failed (brief 004 §5.1): a retry is counted and logged by it. */
    errorClass: ErrorClass;
    traceId?: string;
  };
  /** A run entered a business state (`ctx.setState`, a stored workflow's `states`), journaled by this process; `from` is the state it left. */
  'run:state': { runId: string; workflow: string; kind: RunKind; state: string; from: string | null };
  /**
   * One request of a poll (`ctx.poll`, a stored `poll` step) ended: the work is not done yet
   * (`pending`), the request failed and is tried again (`retrying`), or the poll ended
   * (`complete`, `failed`, `timed_out`: its maximum wait passed). `status` is what the answer said
   * (`processing`, or the HTTP status); `nextDelayMs` is the durable wait before the next request.
   */
  'poll:attempt': {
    runId: string;
    workflow: string;
    step: string;
    attempt: number;
    outcome: PollOutcome;
    status?: string;
    nextDelayMs?: number;
    error?: string;
    errorClass?: ErrorClass;
  };
  /**
   * A compensation (the undo of a completed step, or a poll's cancel: `cancel`) ended, as journaled:
   * `completed`, `skipped` (it decided there was nothing to undo: `reason`), or `failed` for good.
   */
  'compensation:end': {
    runId: string;
    workflow: string;
    step: string;
    outcome: 'completed' | 'skipped' | 'failed';
    cancel: boolean;
    reason?: string;
    error?: string;
  };
  /** A step was told to wait for the named rate limit `limit` (journaled `step.rate_waiting`, committed). */
  'flow:rate_wait': { runId: string; limit: string };
  /** A start joined an open debounce window: its input went to the window's run `runId`, no new run started. */
  'flow:debounced': { runId: string };
  /** A run passed its budget (`exceeded`), or a person decided on its wait (`approved`, `rejected`). */
  'flow:budget': { runId: string; decision: 'approved' | 'rejected' | 'exceeded' };
  'task:claim': { queue: string; taskId: string; attempt: number; workerId: string };
  'task:complete': { queue: string; taskId: string; attempt: number; durationMs: number };
  'task:retry': { queue: string; taskId: string; attempt: number; error: string; retryAt: number };
  'task:dead': { queue: string; taskId: string; attempt: number; error: string };
  /** A lease this process held was lost: another worker owns the task (or run, or subscription) now. */
  'lease:lost': { what: 'task' | 'run' | 'subscription'; queue?: string; id: string };
  'subscription:parked': { subscription: string; position: number; error: string };
  /** `route` is the route's template (`/workflows/{id}`), never the raw path. */
  'http:request': { method: string; route: string; status: number; durationMs: number };
  /** An address failed authentication more than allowed in a window: its requests get 429 until the window ends (told once per window). */
  'auth:throttled': { address: string; failures: number; windowMs: number };
  'store:transaction': { durationMs: number; ok: boolean };
  /** One group commit (`journal/group-commit.ts`) committed: the writes it carried (of runs and tasks) and the events they appended. */
  'store:batch': { writes: number; events: number };
  /** Retention deleted (or, in a dry run, would delete) these; `kind` is the policy's kind. */
  'retention:pruned': { kind: string; runs: number; events: number; tasks: number; dryRun: boolean };
  /** Something failed in the background (a worker loop, a sweep); it is retried. */
  'engine:error': { what: string; error: unknown };
}

export type EngineEventName = keyof EngineEventMap;
export type EngineListener<K extends EngineEventName> = (payload: EngineEventMap[K]) => void;

/** `code` runs, stored-workflow `execution`s, agent `session`s. */
export type RunKind = 'code' | 'execution' | 'session';
/** `partial`: the run ended `partial_success` (some of its work failed): not a success. */
export type RunOutcome = 'success' | 'partial' | 'failed' | 'cancelled';
export type PollOutcome = 'pending' | 'retrying' | 'complete' | 'failed' | 'timed_out';
export type { ErrorClass };

/** Every event name, for a logger or a test that wants them all. */
export const ENGINE_EVENTS: EngineEventName[] = [
  'run:start',
  'run:end',
  'run:pass',
  'step:complete',
  'step:fail',
  'run:state',
  'poll:attempt',
  'compensation:end',
  'flow:rate_wait',
  'flow:debounced',
  'flow:budget',
  'task:claim',
  'task:complete',
  'task:retry',
  'task:dead',
  'lease:lost',
  'subscription:parked',
  'http:request',
  'auth:throttled',
  'store:transaction',
  'store:batch',
  'retention:pruned',
  'engine:error',
];

/** The kind of a run, from the name of the workflow that runs it. */
export function runKind(workflow: string): RunKind {
  if (workflow === 'runledger.stored') return 'execution';
  if (workflow.startsWith('runledger.session') || workflow.startsWith('runledger.agent')) return 'session';
  return 'code';
}

/**
 * The workflow name a run's events carry: a stored workflow's execution is known by the stored
 * workflow's name (from its input), not by the interpreter's (`runledger.stored`). One name per
 * definition, never an id: metrics label with it.
 */
export function workflowLabel(workflow: string, input: unknown): string {
  // a stored workflow's execution is known by the workflow's name, a remote function's run by the function's
  const field =
    workflow === 'runledger.stored' ? 'workflow_name' : workflow === 'runledger.function' ? 'function' : null;
  if (field === null) return workflow;
  const name = (input as Record<string, unknown> | null | undefined)?.[field];
  return typeof name === 'string' && name !== '' ? name : workflow;
}

/**
 * A small typed emitter owned by one engine. With no listener for a name, `emit` is one map
 * lookup; `has` lets a hot path skip building a payload. A listener that throws is ignored: an
 * observer must never break what it observes.
 *
 * @example
 * const events = new EngineEvents();
 * const off = events.on('task:dead', ({ queue, taskId }) => alert(queue, taskId));
 * off();
 */
export class EngineEvents {
  private readonly listeners = new Map<EngineEventName, Set<(payload: never) => void>>();

  on<K extends EngineEventName>(name: K, listener: EngineListener<K>): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener as (payload: never) => void);
    return () => {
      set.delete(listener as (payload: never) => void);
      if (set.size === 0 && this.listeners.get(name) === set) this.listeners.delete(name);
    };
  }

  has(name: EngineEventName): boolean {
    return this.listeners.has(name);
  }

  emit<K extends EngineEventName>(name: K, payload: EngineEventMap[K]): void {
    const set = this.listeners.get(name);
    if (!set) return;
    for (const listener of set) {
      try {
        (listener as EngineListener<K>)(payload);
      } catch {
        // observers must not break the engine
      }
    }
  }
}
