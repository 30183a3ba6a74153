import { backoffDelay } from '../../backoff.js';
import { toMs, type Duration } from '../../duration.js';
import { describeError, RetryAfterError, StepTimedOutError, TerminalError, TimeoutError } from '../../errors.js';
import { checkJson } from '../../json.js';
import { errorClassOf, type ErrorClass } from '../../observe/error-class.js';
import { LazyAbort } from '../../queue/abort.js';
import type { BranchResult, RetryPolicy, StepContext } from '../workflow.js';

/** A call's retries unless it says otherwise: 3 tries, 1 s doubling up to a minute. */
export const DEFAULT_RETRY = { maxAttempts: 3, base: 1000, factor: 2, max: 60_000 };

/**
 * How long to wait before the try after `attempt` of a step, node or poll that failed with `error`,
 * or null when that was its last: a TerminalError, or the policy's tries used up. A 429's
 * `Retry-After` (RetryAfterError) is never cut short.
 */
export function retryDelay(error: unknown, attempt: number, policy: RetryPolicy | undefined): number | null {
  if (error instanceof TerminalError || attempt >= (policy?.maxAttempts ?? DEFAULT_RETRY.maxAttempts)) return null;
  const backoff = {
    baseMs: toMs(policy?.backoff?.base ?? DEFAULT_RETRY.base),
    factor: policy?.backoff?.factor ?? DEFAULT_RETRY.factor,
    maxMs: toMs(policy?.backoff?.max ?? DEFAULT_RETRY.max),
    jitter: 0.2,
  };
  return Math.max(backoffDelay(attempt, backoff), error instanceof RetryAfterError ? error.retryAfterMs : 0);
}

/** Thrown inside a `ctx` call that has to wait: the call's promise then never settles in this pass. */
export class Suspension {
  constructor(readonly until: number) {}
}

/** A failure as the journal records it; an HTTP `status` the error carried is kept, so replay can route on it. */
export interface FailureData {
  error: string;
  errorName: string;
  status?: number;
  /** What kind of failure it was (observe/error-class.ts): kept, since a network error's code does not survive the journal. */
  errorClass?: ErrorClass;
}

export function failureData(error: unknown): FailureData {
  const status = (error as { status?: unknown } | null)?.status;
  const data: FailureData = {
    error: describeError(error),
    errorName: error instanceof Error ? error.name : 'Error',
    errorClass: errorClassOf(error),
  };
  if (typeof status === 'number') data.status = status;
  return data;
}

/** The error a call failed with for good, as workflow code saw it the first time (its name, message and status). */
export function rebuild(failure: FailureData): Error {
  const message = failure.error.replace(/^[^:]*: /, '');
  const error =
    failure.errorName === 'TerminalError'
      ? new TerminalError(message)
      : failure.errorName === 'StepTimedOutError'
        ? new StepTimedOutError(message)
        : new Error(message);
  error.name = failure.errorName;
  if (failure.status !== undefined) Object.assign(error, { status: failure.status });
  if (failure.errorClass !== undefined) Object.assign(error, { errorClass: failure.errorClass });
  return error;
}

/** A step's output must survive JSON and fit in an event; else the step fails for good. */
export function checkOutput(name: string, output: unknown, maxBytes: number): void {
  try {
    checkJson(`step ${name}: output`, output ?? null, maxBytes);
  } catch (error) {
    throw new TerminalError((error as Error).message);
  }
}

/**
 * One try of a step: its signal fires on timeout, on `stop` (cancellation, a lost lease), or at
 * once when `stop` already fired. The signal is made when the step first reads it (`LazyAbort`):
 * most steps never look, and an AbortController with its listener was 3% of a 10-step run's time
 * on SQLite (measured); the try ends on those causes whether or not it looked.
 */
export async function runAttempt<T>(
  stop: AbortSignal,
  fn: (ctx: StepContext) => Promise<T>,
  ctx: { idempotencyKey: string; attempt: number; traceparent?: string },
  timeout?: Duration,
): Promise<T> {
  const signal = new LazyAbort();
  let fail!: (reason: unknown) => void;
  const aborted = new Promise<never>((_, reject) => (fail = reject));
  const abort = (reason: unknown) => {
    signal.abort(reason);
    fail(reason);
  };
  const onStop = () => abort(stop.reason);
  stop.addEventListener('abort', onStop);
  // a pass stopped while this step's start was being written: no 'abort' event comes any more
  if (stop.aborted) onStop();
  const timer =
    timeout === undefined
      ? null
      : setTimeout(() => abort(new TimeoutError(`step timed out after ${toMs(timeout)} ms`)), toMs(timeout));
  try {
    return await Promise.race([
      fn({
        ...ctx,
        get signal() {
          return signal.signal;
        },
      }),
      aborted,
    ]);
  } finally {
    if (timer) clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}

/** How each branch of a `ctx.parallel` ended, by name. */
export function branchResults(
  names: string[],
  settled: PromiseSettledResult<unknown>[],
): Record<string, BranchResult<unknown>> {
  const results: Record<string, BranchResult<unknown>> = {};
  settled.forEach((r, i) => {
    results[names[i]!] =
      r.status === 'fulfilled'
        ? { status: 'success', output: r.value }
        : { status: 'failed', error: r.reason instanceof Error ? r.reason : new Error(String(r.reason)) };
  });
  return results;
}
