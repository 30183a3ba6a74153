import { LeaseLostError, NonDeterminismError, describeError } from '../../errors.js';
import { errorClassOf, type ErrorClass } from '../../observe/error-class.js';
import type { NewEvent, Store } from '../../storage/store.js';
import { checkOutput, failureData, rebuild, retryDelay, Suspension, type FailureData } from './calls.js';
import type { Seq } from './history.js';
import type { PollHost } from './poll.js';
import type { NodeContext, NodeOptions, StepContext, StepOptions } from '../workflow.js';
import { RUN_EVENT } from '../events.js';
import { chargeStepRates, rateDeferral, rateExtra, rateUses, takeStepRates } from './rate.js';
import { effectOf, intentEvent, settleUnknown } from './effects.js';
import { crashPoint } from '../../crash.js';

/** What `runStep` and `runNode` need of the pass they run in (beyond what a poll needs). */
export interface StepHost extends PollHost {
  /** Journals `events`, running `also` in the same transaction (a step's rate limits: see rate.ts). */
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>): Promise<void>;
  /** Journals `event` with the run's next write (see RunWriter.defer). */
  defer(event: NewEvent): void;
  /** The step attempt's span (see observeStep): its traceparent goes to the step's code. */
  observe(
    name: string,
    attempt: number,
  ): { traceparent?: string; end(error: string | null, willRetry: boolean, errorClass?: ErrorClass): void };
  /** The run was cancelled (a failed node's attempt is then not journaled). */
  cancelled(): boolean;
  /** The pass's call numbering: a node's end moves it past the node's calls. */
  position(): number;
  moveTo(end: number): void;
  /**
   * Inside a node's attempt: step failures journaled at or before this version belong to an earlier
   * attempt and do not count (Infinity: the attempt began in this pass, so none in the history count).
   */
  failuresAfter: number;
}

export async function runStep<T>(
  host: StepHost,
  seq: Seq,
  name: string,
  fn: (ctx: StepContext) => Promise<T>,
  options: StepOptions<T>,
): Promise<T> {
  const h = host.history;
  const completed = h.find(seq, RUN_EVENT.stepCompleted);
  if (completed) return remember(host, seq, name, (completed.data as { output: T }).output, options);
  const failures =
    h.entries.get(seq)?.events.filter((e) => e.type === RUN_EVENT.stepFailed && e.version > host.failuresAfter) ?? [];
  const lastFailure = failures.at(-1)?.data as (FailureData & { retryAt: number | null }) | undefined;
  if (lastFailure && lastFailure.retryAt === null) throw rebuild(lastFailure);
  host.checkLive();
  if (lastFailure?.retryAt && lastFailure.retryAt > host.now()) throw new Suspension(lastFailure.retryAt);

  const key = `${host.runId}:${name}#${seq}`;
  const effect = effectOf(options.effect);
  // an effect whose last call has no recorded outcome is settled first, never called blind (see effects.ts)
  const settled = effect ? await settleUnknown(host, seq, name, key, effect, options) : null;
  if (settled) return remember(host, seq, name, settled.output, options);

  const attempt = h.count(seq, RUN_EVENT.stepStarted) + 1;
  // the step's rate limits, taken before each attempt: no room suspends the pass until there is
  const uses = rateUses(options.rateLimit, `step(${name}).rateLimit`);
  const taken = await takeStepRates(host, seq, name, attempt, uses);
  const started = {
    seq,
    name,
    attempt,
    ...(options.input === undefined ? {} : { input: options.input }),
    ...(options.label ? { label: options.label } : {}),
  };
  await host.write([
    { type: RUN_EVENT.stepStarted, data: started },
    ...(effect ? [intentEvent(seq, name, attempt, key, effect, options.input)] : []),
  ]);
  const seen = host.observe(name, attempt);
  try {
    const output = await host.attempt(
      fn,
      {
        idempotencyKey: key,
        attempt,
        ...(seen.traceparent ? { traceparent: seen.traceparent } : {}),
      },
      options.timeout,
    );
    if (effect) crashPoint('effect:afterCall');
    checkOutput(name, output, host.maxEventBytes);
    const extra = rateExtra(uses, taken, output);
    seen.end(null, false);
    // Journaled with the run's next write, before anything after this step can happen: the next
    // step's start, a timer, the end of the run. One transaction per step instead of two; a
    // crash in between runs this step again, as a crash before its completion always did.
    host.defer({ type: RUN_EVENT.stepCompleted, data: { seq, name, attempt, output: output ?? null } });
    // what the call really used past what it took, charged with its completion
    await chargeStepRates(host, seq, name, attempt, extra);
    return remember(host, seq, name, output, options);
  } catch (error) {
    if (error instanceof LeaseLostError) {
      seen.end(describeError(error), false);
      throw error;
    }
    // stopped by cancellation or the run's deadline: the code sees why, whatever the step made of its signal
    if (host.stopped()) {
      seen.end(describeError(error), false);
      host.checkLive();
    }
    const delay = retryDelay(error, attempt, options.retry);
    const retryAt = delay === null ? null : host.now() + delay;
    seen.end(describeError(error), retryAt !== null, errorClassOf(error));
    // a 429's Retry-After pushes the next free slot of every limit the step took: all runs sharing them back off
    await host.write(
      [{ type: RUN_EVENT.stepFailed, data: { seq, name, attempt, ...failureData(error), retryAt } }],
      rateDeferral(error, taken, host.now()),
    );
    if (retryAt === null) throw error;
    throw new Suspension(retryAt);
  }
}

/**
 * A node: its completion returns the recorded result and moves the call numbering past its calls;
 * otherwise its current attempt runs (or an earlier pass's attempt resumes), numbering its calls
 * after the node's own, the same in every attempt, so a call that completed in an earlier attempt
 * returns its result and one that failed runs again.
 */
export async function runNode<T>(
  host: StepHost,
  seq: Seq,
  name: string,
  fn: (node: NodeContext) => Promise<T>,
  options: NodeOptions,
): Promise<T> {
  const events = host.history.entries.get(seq)?.events ?? [];
  const completed = events.find((e) => e.type === RUN_EVENT.nodeCompleted)?.data as
    | { output: T; end: number }
    | undefined;
  if (completed) {
    host.moveTo(completed.end);
    return completed.output;
  }
  const failures = events.filter((e) => e.type === RUN_EVENT.nodeFailed);
  const lastFailure = failures.at(-1)?.data as (FailureData & { retryAt: number | null; end: number }) | undefined;
  if (lastFailure && lastFailure.retryAt === null) {
    host.moveTo(lastFailure.end);
    throw rebuild(lastFailure);
  }
  host.checkLive();
  if (options.skip) {
    host.defer({
      type: RUN_EVENT.nodeCompleted,
      data: { seq, name, attempt: 0, end: seq, output: null, skipped: true, latency_ms: 0 },
    });
    return null as T;
  }
  const starts = events.filter((e) => e.type === RUN_EVENT.nodeStarted);
  const resumed = starts.length > failures.length ? starts.at(-1)! : null;
  if (!resumed && lastFailure?.retryAt && lastFailure.retryAt > host.now()) throw new Suspension(lastFailure.retryAt);
  const attempt = resumed ? (resumed.data as { attempt: number }).attempt : starts.length + 1;
  const startedAt = resumed ? resumed.timestamp : host.now();
  if (!resumed)
    await host.write([
      {
        type: RUN_EVENT.nodeStarted,
        data: options.input === undefined ? { seq, name, attempt } : { seq, name, attempt, input: options.input },
      },
    ]);
  const outer = host.failuresAfter;
  host.failuresAfter = resumed ? resumed.version : Number.POSITIVE_INFINITY;
  let output: T;
  try {
    output = await fn({ attempt });
    checkOutput(name, output, host.maxEventBytes);
  } catch (error) {
    host.failuresAfter = outer;
    if (error instanceof LeaseLostError || error instanceof NonDeterminismError || host.cancelled()) throw error;
    const delay = retryDelay(error, attempt, options.retry);
    const retryAt = delay === null ? null : host.now() + delay;
    await host.write([
      {
        type: RUN_EVENT.nodeFailed,
        data: { seq, name, attempt, end: host.position(), ...failureData(error), retryAt },
      },
    ]);
    if (retryAt === null) throw error;
    throw new Suspension(retryAt);
  }
  host.failuresAfter = outer;
  // like a step's completion, journaled with the run's next write: the next node's start, a wait, the run's end
  host.defer({
    type: RUN_EVENT.nodeCompleted,
    data: { seq, name, attempt, end: host.position(), output: output ?? null, latency_ms: host.now() - startedAt },
  });
  return output;
}

function remember<T>(host: StepHost, seq: Seq, name: string, output: T, options: StepOptions<T>): T {
  if (options.compensate) host.remember(seq, name, output, options.compensate);
  return output;
}
