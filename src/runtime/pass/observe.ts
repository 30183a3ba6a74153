import type { ErrorClass, RunOutcome } from '../../observe/events.js';
import { runKind, workflowLabel } from '../../observe/events.js';
import { traceIdOf, type Observe } from '../../observe/trace.js';
import type { StoredEvent } from '../../storage/store.js';
import type { Journal } from '../../journal/journal.js';
import { RUN_EVENT } from '../events.js';
import { runStream, type History } from './history.js';
import type { PollReport } from './poll.js';
import type { CompensationReport } from './compensate.js';

export type { Observe };

/**
 * Reports one pass of a run: `run:start` on its first pass, a span for the pass (a child of the
 * trace context stored with the run), and at its end `run:pass`, plus `run:end` when it ended the run.
 */
export function observePass(
  observe: Observe | undefined,
  runId: string,
  history: History,
  started: StoredEvent | undefined,
): {
  traceparent?: string;
  end(outcome: RunOutcome | 'suspended' | 'aborted', cancelledBy?: 'user' | 'system'): void;
} {
  if (!observe) return { end: () => {} };
  const { events, tracer } = observe;
  const workflow = history.workflow;
  const kind = runKind(workflow);
  const label = workflowLabel(workflow, history.input);
  const stored = (started?.data as { traceparent?: string } | undefined)?.traceparent;
  const span = tracer?.start(`run ${workflow}`, {
    parent: stored,
    attributes: { 'runledger.run_id': runId, 'runledger.workflow': workflow, 'runledger.run_kind': kind },
  });
  const trace = traced(span?.traceparent ?? stored);
  if (history.entries.size === 0) events.emit('run:start', { runId, workflow: label, kind, ...trace });
  const began = performance.now();
  return {
    ...(span ? { traceparent: span.traceparent } : {}),
    end: (outcome, cancelledBy) => {
      const durationMs = performance.now() - began;
      span?.end(outcome === 'failed' || outcome === 'aborted' ? outcome : undefined, { 'runledger.outcome': outcome });
      events.emit('run:pass', { runId, workflow: label, kind, durationMs, outcome });
      if (outcome !== 'suspended' && outcome !== 'aborted') {
        events.emit('run:end', {
          runId,
          workflow: label,
          kind,
          outcome,
          durationMs: Date.now() - (started?.timestamp ?? Date.now()),
          ...(outcome === 'cancelled' ? { cancelledBy: cancelledBy ?? 'user' } : {}),
          ...trace,
        });
      }
    },
  };
}

/**
 * Reports one attempt of a step of the pass `of` (its `traceparent`: the pass's span): a span (a
 * child of the pass's), and `step:complete` or `step:fail` at its end.
 */
export function observeStep(
  of: { observe?: Observe; history: History; traceparent?: string },
  runId: string,
  step: string,
  attempt: number,
): { traceparent?: string; end(error: string | null, willRetry: boolean, errorClass?: ErrorClass): void } {
  const { observe, history, traceparent: parent } = of;
  if (!observe) return { end: () => {} };
  const { events, tracer } = observe;
  const workflow = workflowLabel(history.workflow, history.input);
  const span = tracer?.start(`step ${step}`, {
    parent,
    attributes: { 'runledger.run_id': runId, 'runledger.step': step, 'runledger.attempt': attempt },
  });
  const trace = traced(span?.traceparent ?? parent);
  const began = performance.now();
  let ended = false;
  return {
    ...(span ? { traceparent: span.traceparent } : {}),
    end: (error, willRetry, errorClass = 'other') => {
      if (ended) return;
      ended = true;
      const durationMs = performance.now() - began;
      span?.end(error ?? undefined);
      if (error === null) events.emit('step:complete', { runId, workflow, step, attempt, durationMs, ...trace });
      else
        events.emit('step:fail', {
          runId,
          workflow,
          step,
          attempt,
          durationMs,
          error,
          willRetry,
          errorClass,
          ...trace,
        });
    },
  };
}

/**
 * Reports the business states a pass's code enters: `run:state` for each one this pass journals,
 * with the state the code was in before (the replayed ones count for that).
 */
export function observeStates(
  observe: Observe | undefined,
  runId: string,
  history: History,
): ((state: string, fresh: boolean) => void) | undefined {
  if (!observe) return undefined;
  const workflow = workflowLabel(history.workflow, history.input);
  const kind = runKind(history.workflow);
  let from: string | null = null;
  return (state, fresh) => {
    if (fresh) observe.events.emit('run:state', { runId, workflow, kind, state, from });
    from = state;
  };
}

/** Reports each request of a poll as it is journaled (`poll:attempt`). */
export function observePolls(
  observe: Observe | undefined,
  runId: string,
  history: History,
): ((report: PollReport) => void) | undefined {
  if (!observe) return undefined;
  const workflow = workflowLabel(history.workflow, history.input);
  return (report) => observe.events.emit('poll:attempt', { runId, workflow, ...report });
}

/** Reports each compensation as it ends (`compensation:end`). */
export function observeCompensations(
  observe: Observe | undefined,
  runId: string,
  history: History,
): ((report: CompensationReport) => void) | undefined {
  if (!observe) return undefined;
  const workflow = workflowLabel(history.workflow, history.input);
  return (report) => observe.events.emit('compensation:end', { runId, workflow, ...report });
}

/**
 * Who asked to cancel run `id`: its history's first request, else the first one journaled since the
 * pass read it (a user's, which the cancel watch heard, or the engine's at the run's deadline).
 * Read once per cancelled run, only while something observes; a failed read says `user`.
 */
export async function whoCancelled(journal: Journal, id: string, history: History): Promise<'user' | 'system'> {
  if (history.cancelledBy) return history.cancelledBy;
  try {
    const events = await journal.readStream(runStream(id), { fromVersion: history.version + 1 });
    const asked = events.find((e) => e.type === RUN_EVENT.runCancelRequested)?.data as { by?: unknown } | undefined;
    return asked?.by === 'system' ? 'system' : 'user';
  } catch {
    return 'user';
  }
}

function traced(traceparent: string | undefined): { traceId?: string } {
  const traceId = traceIdOf(traceparent);
  return traceId ? { traceId } : {};
}
