import { errorClassOf } from '../../observe/error-class.js';
import type { StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { joined, type Seq } from '../pass/history.js';
import type { CancelView, RunView, StepView } from './view.js';
import type { Budget } from '../flow.js';

/** A run's view as its `run.started` (or a generation's) event begins it. */
export function newView(id: string, event: StoredEvent): RunView {
  const data = event.data as {
    workflow: string;
    input: unknown;
    version?: string;
    waitingFor?: string | null;
    flow?: { priority?: number; budget?: Budget };
    pauseKey?: string;
  };
  return {
    id,
    workflow: data.workflow,
    version: data.version ?? null,
    status: data.waitingFor ? 'waiting' : 'pending',
    ...(data.waitingFor ? { waitingFor: data.waitingFor } : {}),
    ...(data.flow?.priority ? { priority: data.flow.priority } : {}),
    ...(data.flow?.budget ? { budget: data.flow.budget } : {}),
    ...(data.pauseKey ? { pauseKey: data.pauseKey } : {}),
    input: data.input,
    output: null,
    error: null,
    compensations: null,
    steps: [],
    createdAt: event.timestamp,
    updatedAt: event.timestamp,
  };
}

/** How `event` changes `view`, in place: the body of the `run` projection (`projectRunViews`). */
export function apply(view: RunView, event: StoredEvent): void {
  const data = event.data as Record<string, any>;
  const step = () => view.steps.find((s) => s.seq === data.seq);
  const finish = (s: StepView | undefined, status: StepView['status']) => {
    if (!s) return;
    s.status = status;
    s.finishedAt = event.timestamp;
    s.durationMs = event.timestamp - s.startedAt;
    if (view.current?.name === s.name) view.current = null;
  };
  const begin = (attempt: number, kind?: 'poll') => {
    const existing = step();
    if (existing)
      Object.assign(existing, {
        status: 'running',
        attempts: attempt,
        finishedAt: null,
        durationMs: null,
        input: data.input ?? existing.input,
      });
    else {
      const label = typeof data.label === 'string' ? { label: data.label } : {};
      view.steps.push({
        seq: data.seq,
        name: data.name,
        status: 'running',
        ...(kind ? { kind } : {}),
        ...label,
        attempts: attempt,
        startedAt: event.timestamp,
        finishedAt: null,
        durationMs: null,
        input: data.input ?? null,
        output: null,
        error: null,
      });
      // parallel steps can start in any order; the view lists them in the code's call order
      const last = view.steps.length - 1;
      if (last > 0 && compareSeq(view.steps[last - 1]!.seq, data.seq) > 0)
        view.steps.sort((x, y) => compareSeq(x.seq, y.seq));
    }
    view.current = { name: data.name, label: typeof data.label === 'string' ? data.label : null };
    view.status = 'running';
  };
  // a run that began, ended or continued as new waits no more
  if (view.waitingFor && event.type !== RUN_EVENT.runAdmitted && event.type !== RUN_EVENT.runStarted)
    view.waitingFor = null;
  switch (event.type) {
    case RUN_EVENT.runAdmitted:
      view.waitingFor = data.waitingFor ?? null;
      if (view.status === 'pending' || view.status === 'waiting') view.status = data.waitingFor ? 'waiting' : 'pending';
      return;
    case RUN_EVENT.runThrottled:
    case RUN_EVENT.runBatched:
    case RUN_EVENT.runDebounced:
      // a later start of a debounce window: its input is the run's (last) or joins the list (all), as History reads it
      if ('input' in data)
        view.input =
          event.type === RUN_EVENT.runBatched
            ? joined(view.input, data)
            : data.mode === 'all'
              ? [...(view.input as unknown[]), data.input]
              : data.input;
      if (data.waitingFor && (view.status === 'pending' || view.status === 'waiting'))
        Object.assign(view, { status: 'waiting', waitingFor: data.waitingFor });
      return;
    case RUN_EVENT.runContinued:
      Object.assign(view, {
        status: 'running',
        workflow: data.workflow,
        version: data.version ?? null,
        input: data.input,
        steps: [],
        stepPages: 0,
        generation: data.generation,
        patches: {},
        current: null,
        state: view.state ?? null,
      });
      if (data.pauseKey) view.pauseKey = data.pauseKey;
      else delete view.pauseKey;
      return;
    case RUN_EVENT.patchRecorded:
      view.patches = { ...view.patches, [data.id]: data.patched };
      return;
    case RUN_EVENT.stepStarted:
      begin(data.attempt);
      return;
    case RUN_EVENT.stepCompleted:
      finish(step(), 'success');
      if (step()) step()!.output = data.output;
      // a model call's tokens and cost (`ctx.generate`), counted on top of the last `ctx.usage` totals
      if (data.used) {
        const { tokens = 0, cost = 0, toolCalls = 0 } = view.usage ?? {};
        view.usage = { tokens: tokens + data.used.tokens, cost: cost + data.used.cost, toolCalls };
      }
      return;
    case RUN_EVENT.stepFailed:
      finish(step(), data.retryAt === null ? 'failed' : 'retrying');
      if (step()) Object.assign(step()!, { error: data.error, ...failure(data) });
      return;
    case RUN_EVENT.pollStarted:
      begin(0, 'poll');
      return;
    case RUN_EVENT.pollAttempted:
      if (step())
        Object.assign(step()!, {
          attempts: data.attempt,
          output: data.output ?? step()!.output,
          error: data.error ?? null,
        });
      return;
    case RUN_EVENT.pollCompleted:
    case RUN_EVENT.pollFailed:
    case RUN_EVENT.pollTimedOut:
      finish(
        step(),
        event.type === RUN_EVENT.pollCompleted
          ? 'success'
          : event.type === RUN_EVENT.pollFailed
            ? 'failed'
            : 'timed_out',
      );
      if (step())
        Object.assign(step()!, {
          attempts: data.attempt,
          output: data.output ?? step()!.output,
          error:
            data.error ?? (event.type === RUN_EVENT.pollTimedOut ? 'StepTimedOutError: the maximum wait passed' : null),
          ...(event.type === RUN_EVENT.pollFailed ? failure(data) : {}),
          ...(event.type === RUN_EVENT.pollTimedOut ? { errorClass: 'timeout' } : {}),
        });
      return;
    case RUN_EVENT.stateChanged:
      view.state = data.name;
      return;
    case RUN_EVENT.usageRecorded:
      view.usage = data.totals;
      return;
    case RUN_EVENT.budgetExceeded:
      if (data.onExceed === 'approve')
        Object.assign(view, {
          status: 'waiting',
          waitingFor: data.reason,
          budgetWait: { round: data.round, reason: data.reason },
        });
      return;
    case RUN_EVENT.budgetDecided:
      Object.assign(
        view,
        { status: 'running', budgetWait: null },
        data.decision === 'approve' ? { budget: data.budget } : {},
      );
      return;
    case RUN_EVENT.compensationStarted:
    case RUN_EVENT.compensationConfirming:
    case RUN_EVENT.compensationPolled:
    case RUN_EVENT.compensationCompleted:
    case RUN_EVENT.compensationFailed:
      applyCancel(step(), event.type, data);
      return;
    case RUN_EVENT.stepIntent:
      // a new intent after an unknown outcome is the step run again: `repeated` is what a reader wants to know
      if (step())
        step()!.effect = step()!.effect === 'unknown' || step()!.effect === 'repeated' ? 'repeated' : 'intent';
      return;
    case RUN_EVENT.stepUnknown:
      if (step()) step()!.effect = 'unknown';
      if (data.waitsForPerson)
        Object.assign(view, {
          status: 'waiting',
          waitingFor: `step ${data.name}: its effect's outcome is unknown — decide whether it happened`,
          effectWait: { seq: data.seq, name: data.name, attempt: data.attempt },
        });
      return;
    case RUN_EVENT.stepReconciled:
      if (step()) step()!.effect = data.happened === true ? 'reconciled' : 'repeated';
      if (view.effectWait?.seq === data.seq) Object.assign(view, { status: 'running', effectWait: null });
      return;
    case RUN_EVENT.stepRateWaiting:
      Object.assign(view, { status: 'waiting', waitingFor: data.reason });
      return;
    case RUN_EVENT.sleepStarted:
      view.status = 'sleeping';
      return;
    case RUN_EVENT.waitStarted:
      view.status = 'waiting';
      return;
    case RUN_EVENT.sleepCompleted:
    case RUN_EVENT.waitCompleted:
    case RUN_EVENT.waitTimedOut:
      view.status = 'running';
      return;
    case RUN_EVENT.runCompleted:
      Object.assign(view, { status: data.partial ? 'partial_success' : 'success', output: data.output, current: null });
      return;
    case RUN_EVENT.runFailed:
      Object.assign(view, {
        status: 'failed',
        error: data.error,
        compensations: data.compensations ?? null,
        current: null,
      });
      return;
    case RUN_EVENT.runCancelled:
      Object.assign(view, { status: 'cancelled', compensations: data.compensations ?? null, current: null });
      return;
  }
}

/** A failure's class and HTTP status as journaled (events older than `errorClass` are classed by the error's name and status). */
function failure(data: Record<string, any>): Pick<StepView, 'errorClass' | 'errorStatus'> {
  const status = typeof data.status === 'number' ? data.status : undefined;
  return {
    errorClass: errorClassOf({ errorClass: data.errorClass, name: data.errorName, status }),
    ...(status === undefined ? {} : { errorStatus: status }),
  };
}

/** A poll's cancel as its compensation events say (only a cancel's: `cancel: true`, or its confirmation's). */
function applyCancel(s: StepView | undefined, type: string, data: Record<string, any>): void {
  if (!s || !(data.cancel || type === RUN_EVENT.compensationConfirming || type === RUN_EVENT.compensationPolled))
    return;
  const cancel: CancelView = s.cancel ?? { status: 'sending', polls: 0, reason: null };
  if (type === RUN_EVENT.compensationConfirming) cancel.status = 'confirming';
  else if (type === RUN_EVENT.compensationPolled)
    Object.assign(cancel, { polls: data.poll, reason: data.error ?? null });
  else if (type === RUN_EVENT.compensationFailed)
    Object.assign(cancel, { status: 'failed', reason: data.error ?? null });
  else if (type === RUN_EVENT.compensationCompleted)
    Object.assign(cancel, {
      status: data.confirmed === true ? 'confirmed' : data.confirmed === false ? 'unconfirmed' : 'sent',
      polls: data.polls ?? cancel.polls,
      reason: data.unconfirmed ?? null,
    });
  else Object.assign(cancel, { status: 'sending', reason: null });
  s.cancel = cancel;
}

/** Call order: `3` < `3.a.1` < `3.a.2` < `3.b.1` < `4` (a branch's calls sit where its parallel call is). */
export function compareSeq(a: Seq, b: Seq): number {
  const x = String(a).split('.');
  const y = String(b).split('.');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] === undefined) return -1;
    if (y[i] === undefined) return 1;
    const [p, q] = [Number(x[i]), Number(y[i])];
    const order = Number.isNaN(p) || Number.isNaN(q) ? x[i]!.localeCompare(y[i]!) : p - q;
    if (order !== 0) return order;
  }
  return 0;
}
