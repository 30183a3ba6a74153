import type { Duration } from '../duration.js';

/**
 * Flow control: the brakes a run's start and steps obey. Concurrency and priority are rules of the
 * admission (a run waits its turn, durably, journaled with its reason); throttle and debounce are
 * rules of the keyed start; rate limits are taken by steps; budgets are run state checked before
 * each step. See docs/flow-control.md.
 *
 * A key is an expression over the run's input (`'input.user_id'`, `'input.account.region'`) or a
 * constant (`'openai'`): a run whose key expression yields nothing is refused with that reason.
 */

/** At most `limit` runs of one key in flight (started and not ended; a sleeping run holds its slot). */
export interface ConcurrencyLimit {
  /** Default: one key for all runs of the workflow. */
  key?: string;
  limit: number;
  /**
   * A run over the limit: `'queue'` (default) waits its turn, in start order; `'cancel_in_progress'`: the newest
   * wins, the oldest running run of the key is cancelled (its compensations run) and this one takes its slot;
   * `'drop_newest'`: refused with a ConflictError naming the limit, journaled on the key.
   */
  onLimit?: 'queue' | 'cancel_in_progress' | 'drop_newest';
  /**
   * Waiting runs are grouped by this expression and take turns round-robin, so one group with 10,000 waiting
   * cannot starve another with 10 (`fairBy: 'input.tenant'` under a limit of 50 for the workflow).
   */
  fairBy?: string;
  /** `'workflow'` (default): the key is counted per workflow name; `'global'`: shared by every workflow naming it. */
  scope?: 'workflow' | 'global';
}

/** At most `limit` starts per `period` per key; the rest are delayed (their first pass is scheduled), never dropped. */
export interface Throttle {
  key?: string;
  limit: number;
  period: Duration;
}

/**
 * One run per key after `period` with no new start, with the last input (`mode: 'last'`, default) or all of
 * them (`'all'`: the run's input is the list of inputs, in order); `maxWait` caps the delay from the first start
 * of the window, so a key that never goes quiet still runs. Every start of the window returns the same run.
 */
export interface Debounce {
  key?: string;
  period: Duration;
  maxWait?: Duration;
  mode?: 'last' | 'all';
}

/**
 * Starts of one key become one run of up to `maxSize` inputs: the run's input is the list of them, in start order.
 * The run begins when its batch holds `maxSize` inputs (at once) or `timeout` after the batch's first input, with
 * fewer; the next start opens a new batch. Every start returns the id of the run its input went into.
 */
export interface Batch {
  key?: string;
  /** 1…10,000 inputs per run. */
  maxSize: number;
  /** 1 s…1 day from the batch's first input. */
  timeout: Duration;
  /**
   * The field of the run's input that collects the list (a stored execution's `trigger_data`: the rest of its input is
   * the first start's); by default the run's input is the list.
   */
  into?: string;
}

/** What a start gives a workflow whose run takes `I`: `I`, or for a batched one (its input a list) one of the list. */
export type StartInput<I> = I | (I extends readonly (infer E)[] ? E : never);

/** What a run may use in all. Passing it fails the run naming the budget and the figures, or pauses it for approval. */
export interface Budget {
  tokens?: number;
  cost?: number;
  toolCalls?: number;
  steps?: number;
  wallTime?: Duration;
  /** `'fail'` (default), or `'approve'`: the run waits for a person's decision in the approvals queue. */
  onExceed?: 'fail' | 'approve';
}

/** What a step used, reported with `ctx.usage`; the journal keeps the run's running totals. */
export interface Usage {
  tokens?: number;
  cost?: number;
  toolCalls?: number;
}

/** A step's take of a named rate limit (created with `limits.define`). */
export interface RateLimitUse {
  name: string;
  /** Units the call costs up front. Default 1. */
  units?: number;
  /** For a limit defined with a key: the expression or constant naming this run's key. */
  key?: string;
  /** Units really used, charged after the call from its output (tokens from a model's answer). */
  charge?: (output: any) => number;
}

/** The flow-control options a run is started with; a workflow's own are its defaults. */
export interface FlowOptions {
  concurrency?: ConcurrencyLimit[];
  /** Higher runs first (-100…100, default 0); FIFO within a priority; a waiting run ages, so none starves. */
  priority?: number;
  throttle?: Throttle;
  debounce?: Debounce;
  batch?: Batch;
  budget?: Budget;
}
