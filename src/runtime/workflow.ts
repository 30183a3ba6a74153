import { ValidationError } from '../errors.js';
import { checkVersion, sourceVersion } from './start/versions.js';
import type { Duration } from '../duration.js';
import type { Match } from './match.js';
import type { CancelOn } from './start/start.js';
import type { FlowOptions, RateLimitUse, Usage } from './flow.js';
import { checkFlow } from './flow-check.js';
import type { GenerateOptions, Generation } from './model.js';
import type { EffectOptions } from './pass/effects.js';

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

export interface NodeOptions {
  /** Attempts of the whole node, the first included. Default 3; a `TerminalError` thrown out of it is not retried. */
  retry?: RetryPolicy;
  /** What the node is given, as its journal shows it. */
  input?: unknown;
  /** The node is recorded as skipped (`node.completed` with `skipped: true`, output null) and `fn` does not run. */
  skip?: boolean;
}

/** What a node's function is given. */
export interface NodeContext {
  /** 1 on the first attempt of the node; a crash mid-attempt resumes the same attempt. */
  attempt: number;
}

export interface StepOptions<T> {
  retry?: RetryPolicy;
  /** What the step is given, as its journal and view show it (mask secrets first). */
  input?: unknown;
  /** Per attempt: the step's signal fires and the attempt fails with a timeout. */
  timeout?: Duration;
  /** What a person watching the run reads while the step runs ("Rendering PowerPoint…"). */
  label?: string;
  /**
   * Undoes the step when the run fails or is cancelled, newest step first. At least once: a crash
   * mid-compensation runs it again, so pass `ctx.idempotencyKey` on to what it calls.
   */
  compensate?: (output: T, ctx: StepContext) => Promise<unknown>;
  /** Named rate limits the step takes before it runs; it waits durably (no worker held) for a free slot. */
  rateLimit?: RateLimitUse | RateLimitUse[];
  /**
   * The step is a side effect whose outcome can be unknown: its intent is journaled before it runs, and an attempt
   * after a crash between the call and its record asks `reconcile` (or a person, `atMostOnce`) instead of calling
   * again blind. `true`: the intent only. See docs/orchestration.md.
   *
   * @example
   * effect: {
   *   reconcile: async (key) => {
   *     const found = await bank.findCharge(key);
   *     return found ? { happened: true, output: found } : { happened: false };
   *   },
   * }
   */
  effect?: boolean | EffectOptions<T>;
}

/**
 * A request repeated until its answer says the work is done (`ctx.poll`). Each wait between two
 * requests is a durable timer: the run holds no worker meanwhile, and a crash neither loses nor
 * repeats a wait. The n-th wait is `interval × factor^(n-1)`, at most `maxInterval`, never past
 * the maximum wait; the last request is made when the maximum wait ends.
 */
export interface PollOptions<T> extends StepOptions<T> {
  /** The work is done: the poll returns this answer. */
  until: (answer: T) => boolean;
  /** The work failed for good (a string says why): the poll throws a TerminalError. */
  failWhen?: (answer: T) => boolean | string;
  /** Before the first request. Default 500 ms. */
  initialDelay?: Duration;
  /** After the first request. Default 1 s. */
  interval?: Duration;
  /** Each wait is the last one times this. Default 1.5. */
  factor?: number;
  /** The longest wait. Default 5 s. */
  maxInterval?: Duration;
  /** From the poll's start; then the poll throws a StepTimedOutError. Default 60 s. */
  maxWait?: Duration;
  /**
   * Stops the work at the service (its cancel endpoint) when the run is cancelled while the poll
   * waits, or fails after the poll timed out. Journaled like a compensation, once. As `{ send, until }`
   * the service's status is then polled until it confirms (see PollCancel).
   */
  cancel?: ((ctx: StepContext) => Promise<unknown>) | PollCancel;
}

/**
 * A poll's cancel that is confirmed: `send` asks the service to stop, then `until.poll` is called on the
 * poll's schedule (each wait a durable timer) until `until.until` holds. The run ends (cancelled or failed)
 * only after that, or once `until.maxWait` (default 60 s) passed or `failWhen` held: then the cancel is
 * recorded as unconfirmed, and the run ends all the same. Older compensations run after it.
 *
 * @example
 * cancel: {
 *   send: () => api.cancelJob(id),
 *   until: { poll: () => api.job(id), until: (j) => j.status === 'cancelled', maxWait: '30s' },
 * }
 */
export interface PollCancel<A = any> {
  send: (ctx: StepContext) => Promise<unknown>;
  until: Pick<
    PollOptions<A>,
    'until' | 'failWhen' | 'initialDelay' | 'interval' | 'factor' | 'maxInterval' | 'maxWait'
  > & {
    poll: (ctx: StepContext) => Promise<A>;
  };
}

export interface WaitOptions {
  timeout?: Duration;
  /** Business events this wait takes (see `waitForEvent`): `'data.order_id == input.order_id'` or `{ path, value }`. */
  match?: Match;
  /** With `match`: how long before the wait an event may have arrived and still be taken. At most 24 h. */
  lookback?: Duration;
}

/** How one branch of `ctx.parallel` ended. */
export type BranchResult<T> = { status: 'success'; output: T } | { status: 'failed'; error: Error };

/**
 * What a workflow sees. Everything that touches the world goes through it: each call is
 * journaled, and on replay returns what it returned the first time.
 */
export interface WorkflowContext {
  readonly runId: string;
  /** Runs `fn` once (at least once if the worker dies mid-step) and journals its result. */
  step<T>(name: string, fn: (ctx: StepContext) => Promise<T>, options?: StepOptions<T>): Promise<T>;
  /**
   * A model call as a step: the answer streams into the journal as it comes (`GET /runs/{id}/stream` delivers it
   * live), an attempt after a crash continues from the journaled text, and a completed call returns its recorded
   * answer on every replay. See docs/models.md.
   *
   * @example const { text } = await ctx.generate('answer', { model: offlineModel(), messages: [{ role: 'user', content: 'hi' }] });
   */
  generate(name: string, options: GenerateOptions): Promise<Generation>;
  /** A durable timer: survives restarts, fires once, never early. The run holds no worker meanwhile. */
  sleep(name: string, duration: Duration): Promise<void>;
  sleepUntil(name: string, until: Date | number): Promise<void>;
  /**
   * The payload of the next signal `name` sent to this run (before or after the wait began), or null on timeout.
   * With `match`, also the next business event of type `name` (`POST /events`, `detail-type`) whose field equals
   * the value, by correlation, without the sender knowing the run: its envelope is the payload. `lookback`: an event
   * that arrived that long before the wait began is taken too.
   *
   * @example const paid = await ctx.waitForEvent('payment.received', { match: 'data.order_id == input.order_id', timeout: '1d' });
   */
  waitForEvent<T = unknown>(name: string, options?: WaitOptions): Promise<T | null>;
  /** Starts a child run (its own journal) and waits for its result durably: the parent holds no worker meanwhile. */
  child<I, O>(workflow: Workflow<I, O>, input: I, options?: { id?: string }): Promise<O>;
  /**
   * A checkpoint around a group of calls: `fn` runs with its own `ctx` calls journaled as usual,
   * and its result is journaled once it returns. After a crash the run resumes after the last node
   * whose completion committed and never enters it again (its result is returned as recorded); a
   * node that was running is entered again, and its calls that completed return their results. A
   * throwing node is tried again, from its start, after a backoff (`retry`); the calls that
   * completed in an earlier attempt are not run again, those that failed are. Nodes of one run run
   * one after another, not in parallel.
   */
  node<T>(name: string, fn: (node: NodeContext) => Promise<T>, options?: NodeOptions): Promise<T>;
  /** Fires when this pass stops: the run waits (a timer, a retry, a signal), ended, was cancelled, or this worker lost it. */
  readonly signal: AbortSignal;
  /**
   * Repeats `fn` (a status request) with durable waits until `options.until` holds, and returns
   * that answer. Transient errors follow `options.retry`; a TerminalError or `failWhen` fails it;
   * the maximum wait throws a StepTimedOutError.
   *
   * @example
   * const job = await ctx.poll('render', () => api.job(id), { until: (j) => j.status === 'complete', failWhen: (j) => j.status === 'failed', maxWait: '2m' });
   */
  poll<T>(name: string, fn: (ctx: StepContext) => Promise<T>, options: PollOptions<T>): Promise<T>;
  /**
   * Runs named branches side by side and waits for all of them, whatever each one's outcome.
   * Each branch numbers its own calls, so replay never depends on how the branches interleaved.
   *
   * @example
   * const { word, ppt } = await ctx.parallel('render', { word: (c) => render(c, 'docx'), ppt: (c) => render(c, 'pptx') });
   * if (word.status === 'failed') …
   */
  parallel<B extends Record<string, (ctx: WorkflowContext) => Promise<unknown>>>(
    name: string,
    branches: B,
  ): Promise<{ [K in keyof B]: BranchResult<Awaited<ReturnType<B[K]>>> }>;
  /**
   * Records the business state the run entered (`LAYOUT_QUEUED`); the run's view shows it beside its
   * status. Allowed after cancellation too, so a workflow can record `CANCELLED`.
   */
  setState(state: string): Promise<void>;
  /** The time, journaled: the same on every replay. */
  now(): Promise<number>;
  /** A random number in [0, 1), journaled. */
  random(): Promise<number>;
  /**
   * Whether this run takes the new branch of change `id`: true for a run that reaches this point on
   * code that has it, false for one that went past this point before (its journal was written by
   * code without it). The decision is journaled, so every replay makes it again. Costs no call
   * position: adding `if (ctx.patched('x'))` around new calls leaves old runs replaying as before.
   *
   * @example
   * if (ctx.patched('fraud-check')) await ctx.step('fraud-check', () => checkFraud(order));
   */
  patched(id: string): boolean;
  /**
   * Marks change `id` as done: the code no longer has its old branch. A run that took the old branch
   * stops here (its pass is tried again later, the run does not fail) until code with the branch is
   * back; `runledger runs list --needs-patch <id>` lists such runs before you deploy.
   */
  deprecatePatch(id: string): void;
  /**
   * Ends this generation of the run's history and starts the run's code again from the top with
   * `input`: the same run (same id for signals, waits and the API), a fresh, short history. Signals
   * that were sent and not consumed, even during the switch, are kept. With `workflow`, the next
   * generation runs that workflow's version (a long-lived run moving to new code). Call it with
   * nothing else in flight; it never returns.
   *
   * @example
   * if (processed >= 1000) return ctx.continueAsNew({ cursor });
   */
  continueAsNew(input: unknown, options?: { workflow?: Workflow }): Promise<never>;
  /**
   * Reports what the run used (model tokens, cost, tool calls), journaled; the run's totals count against its
   * budget, checked before each step.
   *
   * @example await ctx.usage({ tokens: answer.usage.totalTokens, cost: 0.002 });
   */
  usage(used: Usage): Promise<void>;
}

const PARTIAL = Symbol('runledger.partial');

/** What a workflow returns when part of its work failed: the run ends `partial_success` with `output`. */
export interface PartialResult<O> {
  readonly [PARTIAL]: true;
  readonly output: O;
}

/**
 * Ends the run `partial_success` (some branches failed, others succeeded) with `output`.
 *
 * @example return partialSuccess({ word, ppt });
 */
export function partialSuccess<O>(output: O): PartialResult<O> {
  return { [PARTIAL]: true, output };
}

export function isPartial(value: unknown): value is PartialResult<unknown> {
  return typeof value === 'object' && value !== null && PARTIAL in value;
}

export interface Workflow<I = any, O = any> {
  readonly name: string;
  /** The code version runs of it record; a run's passes run only on a worker that has it. */
  readonly version: string;
  readonly run: (ctx: WorkflowContext, input: I) => Promise<O>;
  /** What a run's `timeout` does to it: fail it (the default) or cancel it as the system (see WorkflowOptions). */
  readonly onDeadline?: 'fail' | 'cancel';
  /** Business events that cancel its runs (see WorkflowOptions). */
  readonly cancelOn?: CancelOn[];
  /** Its runs' flow control by default (see FlowOptions). */
  readonly flow?: FlowOptions;
  /** A second name a workflow pause holds a run by, from its input (see WorkflowOptions). */
  readonly pauseKey?: (input: any) => string | undefined;
}

export interface WorkflowOptions {
  /**
   * Default: a hash of `run`'s source. A run started on one version is only ever replayed by code
   * of that version; a deploy that changes the version leaves running runs to the workers that
   * still have theirs. Set it yourself when the code it calls (not only `run`'s body) changes
   * what it does, or to keep a version across edits guarded by `ctx.patched`.
   */
  version?: string;
  /**
   * What a run's `timeout` does: `'fail'` (default) fails it with a TimeoutError; `'cancel'` cancels it as the
   * system would (brief 004 §9.1): `run.cancel_requested` journaled with `by: 'system'` and a reason naming the
   * timeout, the code sees a CancelledError, the run ends cancelled after its compensations.
   */
  onDeadline?: 'fail' | 'cancel';
  /**
   * Business events (`POST /events`, by `detail-type`) that cancel a run as a user would, its compensations run:
   * `[{ event: 'order.cancelled', match: 'data.order_id == input.order_id' }]`. A start may give its own.
   */
  cancelOn?: CancelOn[];
  /** Keyed concurrency limits of its runs (see ConcurrencyLimit). */
  concurrency?: FlowOptions['concurrency'];
  priority?: FlowOptions['priority'];
  throttle?: FlowOptions['throttle'];
  debounce?: FlowOptions['debounce'];
  /** Its runs take their inputs in batches (see Batch): the run's input is the list. */
  batch?: FlowOptions['batch'];
  budget?: FlowOptions['budget'];
  /**
   * A second name a pause of kind `workflow` holds a run by, beside the workflow's own, read from the run's input when
   * it starts and kept with the run: `(input) => input.workflow_id` lets one code workflow that runs many definitions
   * (the stored workflows' `runledger.stored`) pause each definition's runs alone. Undefined: none.
   */
  pauseKey?: (input: any) => string | undefined;
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
 * const billing = workflow('billing', { version: '2' }, async (ctx, input: { account: string }) => { … });
 */
export function workflow<I, O>(name: string, run: (ctx: WorkflowContext, input: I) => Promise<O>): Workflow<I, O>;
export function workflow<I, O>(
  name: string,
  options: WorkflowOptions,
  run: (ctx: WorkflowContext, input: I) => Promise<O>,
): Workflow<I, O>;
export function workflow<I, O>(
  name: string,
  second: WorkflowOptions | ((ctx: WorkflowContext, input: I) => Promise<O>),
  third?: (ctx: WorkflowContext, input: I) => Promise<O>,
): Workflow<I, O> {
  const run = typeof second === 'function' ? second : third;
  if (typeof run !== 'function') throw new ValidationError('run', `workflow '${name}' needs a function`);
  const options = typeof second === 'function' ? {} : second;
  const version = options.version === undefined ? sourceVersion(run) : checkVersion(options.version);
  if (options.onDeadline !== undefined && options.onDeadline !== 'fail' && options.onDeadline !== 'cancel')
    throw new ValidationError('onDeadline', `must be 'fail' or 'cancel' (got ${JSON.stringify(options.onDeadline)})`);
  const { concurrency, priority, throttle, debounce, batch, budget } = options;
  const flow = checkFlow({ concurrency, priority, throttle, debounce, batch, budget });
  return Object.freeze({
    name,
    version,
    run,
    ...(options.onDeadline ? { onDeadline: options.onDeadline } : {}),
    ...(options.cancelOn ? { cancelOn: options.cancelOn } : {}),
    ...(Object.keys(flow).length > 0 ? { flow: Object.freeze(flow) } : {}),
    ...(options.pauseKey ? { pauseKey: options.pauseKey } : {}),
  });
}

/** What the journal holds for one call: its kind (`step`, `sleep`, `wait`, `child` …), name and events. */
export interface RecordedCall {
  kind: string;
  name: string;
  events: ReadonlyArray<{ type: string; data: unknown }>;
}

const RECORDED = Symbol('runledger.recorded');

/** Gives `ctx` the peek `nextRecorded` reads (the pass does, for the run's own order). */
export function withRecorded(ctx: WorkflowContext, peek: () => RecordedCall | undefined): WorkflowContext {
  Object.defineProperty(ctx, RECORDED, { value: peek });
  return ctx;
}

/**
 * What the journal holds at `ctx`'s next call, undefined for a new one. For an executor of code that runs elsewhere
 * (functions/: it replays the calls the journal holds before it asks the code for the next), never for workflow
 * code, whose calls must not depend on what the journal holds.
 */
export function nextRecorded(ctx: WorkflowContext): RecordedCall | undefined {
  const peek = (ctx as unknown as Record<symbol, (() => RecordedCall | undefined) | undefined>)[RECORDED];
  if (!peek) throw new ValidationError('ctx', "is not a run's own context (a parallel branch has none)");
  return peek();
}
