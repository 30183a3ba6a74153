import type { Duration } from '../duration.js';

export interface StepContext {
  /** Stable for this run and step across retries and crashes: pass it to side effects. */
  idempotencyKey: string;
  /** 1 on the first try. */
  attempt: number;
  /** Fires on the step's timeout, on cancellation, or when this worker lost the run. */
  signal: AbortSignal;
  /** The W3C `traceparent` of this attempt's span when tracing is on: send it to the services the step calls. */
  traceparent?: string;
}

export interface RetryPolicy {
  /** Tries in all, the first included. Default 3. */
  maxAttempts?: number;
  backoff?: { base?: Duration; factor?: number; max?: Duration };
}

export interface StepOptions<T> {
  retry?: RetryPolicy;
  /** What the step is given, as its journal and view show it (mask secrets first). */
  input?: unknown;
  /** Per attempt: the step's signal fires and the attempt fails with a timeout. */
  timeout?: Duration;
  /**
   * Undoes the step when the run fails or is cancelled, newest step first. At least once: a crash
   * mid-compensation runs it again, so pass `ctx.idempotencyKey` on to what it calls.
   */
  compensate?: (output: T, ctx: StepContext) => Promise<unknown>;
}

/**
 * What a workflow sees. Everything that touches the world goes through it: each call is
 * journaled, and on replay returns what it returned the first time.
 */
export interface WorkflowContext {
  readonly runId: string;
  /** Runs `fn` once (at least once if the worker dies mid-step) and journals its result. */
  step<T>(name: string, fn: (ctx: StepContext) => Promise<T>, options?: StepOptions<T>): Promise<T>;
  /** A durable timer: survives restarts, fires once, never early. The run holds no worker meanwhile. */
  sleep(name: string, duration: Duration): Promise<void>;
  sleepUntil(name: string, until: Date | number): Promise<void>;
  /** The payload of the next signal `name` sent to this run (before or after the wait began), or null on timeout. */
  waitForEvent<T = unknown>(name: string, options?: { timeout?: Duration }): Promise<T | null>;
  /** Starts a child run (its own journal) and waits for its result durably: the parent holds no worker meanwhile. */
  child<I, O>(workflow: Workflow<I, O>, input: I, options?: { id?: string }): Promise<O>;
  /** The time, journaled: the same on every replay. */
  now(): Promise<number>;
  /** A random number in [0, 1), journaled. */
  random(): Promise<number>;
}

export interface Workflow<I = any, O = any> {
  readonly name: string;
  readonly run: (ctx: WorkflowContext, input: I) => Promise<O>;
}

/**
 * Declares a workflow. Its code must be deterministic apart from `ctx`: on recovery it runs again
 * from the top, and every `ctx` call returns its journaled result until the point of the crash.
 *
 * @example
 * const onboard = workflow('onboard', async (ctx, input: { userId: string }) => {
 *   const user = await ctx.step('load-user', () => api.load(input.userId));
 *   await ctx.sleep('cool-down', '1h');
 *   return user;
 * });
 */
export function workflow<I, O>(name: string, run: (ctx: WorkflowContext, input: I) => Promise<O>): Workflow<I, O> {
  return Object.freeze({ name, run });
}
