/**
 * The events of a run's stream (`run:<id>`), named once: each type, the `ctx` call or transition
 * it records (`kind`), whether it ends the run (`terminal`), and what the run view does with it
 * (`view`, applied in view.ts). Code names a type through `RUN_EVENT` (`RUN_EVENT.runStarted` is
 * `'run.started'`); a test checks that no other source file spells one as a string.
 */
export const runEventTable = {
  runStarted: {
    type: 'run.started',
    kind: 'run',
    terminal: false,
    view: 'creates the view: running, its workflow, version and input',
  },
  runCancelRequested: {
    type: 'run.cancel_requested',
    kind: 'run',
    terminal: false,
    view: 'none: the next pass cancels the run',
  },
  runCompleted: {
    type: 'run.completed',
    kind: 'run',
    terminal: true,
    view: 'success (partial_success when partial), its output',
  },
  runFailed: { type: 'run.failed', kind: 'run', terminal: true, view: 'failed, its error and compensations' },
  runCancelled: { type: 'run.cancelled', kind: 'run', terminal: true, view: 'cancelled, its compensations' },
  /** A run that waited for a concurrency slot got it: it begins (`waitingFor` null), or waits for its next limit. */
  runAdmitted: {
    type: 'run.admitted',
    kind: 'run',
    terminal: false,
    view: 'pending once it holds every slot, or waiting, its reason',
  },
  runContinued: {
    type: 'run.continued',
    kind: 'run',
    terminal: false,
    view: 'a new generation: running, its input, no steps',
  },
  /** A throttled start's slot (`until`, ms); later than the start, its first pass waits for it (`waitingFor`). */
  runThrottled: { type: 'run.throttled', kind: 'run', terminal: false, view: 'waiting: throttled until its slot' },
  /** A start of a debounce window: the first opens it (no input), each later one brings its input; `until` moves. */
  runDebounced: {
    type: 'run.debounced',
    kind: 'run',
    terminal: false,
    view: 'waiting: debounced until the window closes; the input (last: replaced, all: appended)',
  },
  /**
   * An input of a batch (`size` of `max`, the batch's run begins at `until` or when full): the first opens it (its input
   * is the run's first), each later one brings its `input`, appended to the run's list.
   */
  runBatched: {
    type: 'run.batched',
    kind: 'run',
    terminal: false,
    view: 'waiting: "batch <size> of <max>" until the batch is full or its timeout; the input appended',
  },
  stepStarted: { type: 'step.started', kind: 'step', terminal: false, view: 'the step running, its attempt' },
  stepCompleted: { type: 'step.completed', kind: 'step', terminal: false, view: 'the step success, its output' },
  stepFailed: {
    type: 'step.failed',
    kind: 'step',
    terminal: false,
    view: 'the step retrying, or failed when no retry is due',
  },
  /**
   * An effect step's intent (`effect` option), committed before its function runs: its idempotency key and input. The
   * one place that says "this step is an effect" (see pass/effects.ts).
   */
  stepIntent: { type: 'step.intent', kind: 'step', terminal: false, view: "the step's effect: intent" },
  /** An intent with no recorded outcome (a crash between the call and its record); `waitsForPerson`: atMostOnce. */
  stepUnknown: {
    type: 'step.unknown',
    kind: 'step',
    terminal: false,
    view: "the step's effect: unknown; waiting for a person (atMostOnce without reconcile)",
  },
  /** What `reconcile` or a person (`by`) found: `happened` true (step.completed follows), false (runs again), null (fail). */
  stepReconciled: {
    type: 'step.reconciled',
    kind: 'step',
    terminal: false,
    view: "the step's effect: reconciled, or repeated (happened: false)",
  },
  /**
   * A step asks for its rate limits before attempt `attempt` (`round` counts its asks): the buckets are charged in the
   * same transaction, and the answer is kept under the ask's id, so asking again after a crash is charged once.
   */
  stepRateRequested: { type: 'step.rate_requested', kind: 'step', terminal: false, view: 'none' },
  /** The limits had no room: the step waits until `retryAt` (a timer), then asks again (`reason` names the limit). */
  stepRateWaiting: {
    type: 'step.rate_waiting',
    kind: 'step',
    terminal: false,
    view: 'waiting, its reason (rate limit <name> — next slot <time>)',
  },
  /**
   * Text a `ctx.generate` step's model streamed, journaled in small batches: `at` is its offset (characters) in the
   * answer, so the batches of every attempt, in order, are the answer without a gap or a repeat.
   */
  stepText: { type: 'step.text', kind: 'step', terminal: false, view: 'none: GET /runs/{id}/stream delivers it' },
  /** A `ctx.generate` attempt took the answer up at character `at` (the seam), continuing it (`prefix`) or not (`restart`). */
  stepResumed: { type: 'step.resumed', kind: 'step', terminal: false, view: 'none: GET /runs/{id}/stream shows it' },
  /** Units a step really used past those it took (its `charge`), charged to the bucket after the call. */
  stepRateCharged: { type: 'step.rate_charged', kind: 'step', terminal: false, view: 'none' },
  sleepStarted: { type: 'sleep.started', kind: 'sleep', terminal: false, view: 'sleeping' },
  sleepCompleted: { type: 'sleep.completed', kind: 'sleep', terminal: false, view: 'running' },
  waitStarted: { type: 'wait.started', kind: 'wait', terminal: false, view: 'waiting' },
  waitCompleted: { type: 'wait.completed', kind: 'wait', terminal: false, view: 'running' },
  waitTimedOut: { type: 'wait.timed_out', kind: 'wait', terminal: false, view: 'running' },
  signalSent: { type: 'signal.sent', kind: 'signal', terminal: false, view: 'none: a waitForEvent takes it' },
  childStarted: { type: 'child.started', kind: 'child', terminal: false, view: 'none' },
  childCompleted: { type: 'child.completed', kind: 'child', terminal: false, view: 'none' },
  childFailed: { type: 'child.failed', kind: 'child', terminal: false, view: 'none' },
  valueRecorded: { type: 'value.recorded', kind: 'value', terminal: false, view: 'none' },
  nodeStarted: { type: 'node.started', kind: 'node', terminal: false, view: 'none (the agent ledger projects nodes)' },
  nodeCompleted: {
    type: 'node.completed',
    kind: 'node',
    terminal: false,
    view: 'none (the agent ledger projects nodes)',
  },
  nodeFailed: { type: 'node.failed', kind: 'node', terminal: false, view: 'none (the agent ledger projects nodes)' },
  compensationStarted: {
    type: 'compensation.started',
    kind: 'compensation',
    terminal: false,
    view: "none; a poll's cancel: the step's cancel sending",
  },
  compensationCompleted: {
    type: 'compensation.completed',
    kind: 'compensation',
    terminal: false,
    view: "none; a poll's cancel: sent, confirmed or unconfirmed",
  },
  compensationFailed: {
    type: 'compensation.failed',
    kind: 'compensation',
    terminal: false,
    view: "none; a poll's cancel: failed",
  },
  /** A poll's cancel was accepted; the service's status is polled until it confirms (`cancel.until`). */
  compensationConfirming: {
    type: 'compensation.confirming',
    kind: 'compensation',
    terminal: false,
    view: "the step's cancel confirming",
  },
  compensationPolled: {
    type: 'compensation.polled',
    kind: 'compensation',
    terminal: false,
    view: "the step's cancel: its polls, last answer or error",
  },
  patchRecorded: { type: 'patch.recorded', kind: 'patch', terminal: false, view: 'the patch decision' },
  pollStarted: { type: 'poll.started', kind: 'poll', terminal: false, view: 'the poll step running' },
  pollAttempted: {
    type: 'poll.attempted',
    kind: 'poll',
    terminal: false,
    view: 'the poll step attempts, last answer or error',
  },
  pollCompleted: { type: 'poll.completed', kind: 'poll', terminal: false, view: 'the poll step success' },
  pollFailed: { type: 'poll.failed', kind: 'poll', terminal: false, view: 'the poll step failed' },
  pollTimedOut: { type: 'poll.timed_out', kind: 'poll', terminal: false, view: 'the poll step timed_out' },
  stateChanged: { type: 'state.changed', kind: 'state', terminal: false, view: 'the business state' },
  /** `ctx.usage`: what the run used (`used`) and its running totals (`totals`), at the call's position. */
  usageRecorded: { type: 'value.usage', kind: 'value', terminal: false, view: 'the run usage totals' },
  /** The run passed its budget: `onExceed: 'approve'` waits for a decision (`round` names the wait). */
  budgetExceeded: {
    type: 'budget.exceeded',
    kind: 'budget',
    terminal: false,
    view: 'waiting for approval, its reason (approve); none (fail: run.failed follows)',
  },
  /** A person's decision on a budget wait (`by`), and the budget from then on (`budget`). */
  budgetDecided: { type: 'budget.decided', kind: 'budget', terminal: false, view: 'running, the budget' },
} as const satisfies Record<string, { type: string; kind: string; terminal: boolean; view: string }>;

/** The events of an ordering key's stream (`ordering:<key>`): runs waiting for their turn. */
export const orderingEventTable = {
  runQueued: { type: 'run.queued', kind: 'ordering', terminal: false, view: 'none' },
  runReleased: { type: 'run.released', kind: 'ordering', terminal: false, view: 'none' },
  /** A start refused by a full `drop_newest` limit: the run id and the reason, on the key's stream alone. */
  runDropped: { type: 'run.dropped', kind: 'ordering', terminal: false, view: 'none' },
} as const;

/** The event that takes a key of a keyed start (`keyed.ts`), first in the key's stream, when the caller names none. */
export const keyEventTable = {
  runKeyed: { type: 'run.keyed', kind: 'key', terminal: false, view: 'none: names the run the key started' },
  /** A start of a throttled key (`throttle:<wf>:<key>`): the append locks the key while its next slot is taken. */
  throttleStarted: { type: 'throttle.started', kind: 'key', terminal: false, view: 'none: the run shows its slot' },
  /** A start of a debounced key (`debounce:<wf>:<key>`): the append locks the key while the window is read. */
  debounceStarted: { type: 'debounce.started', kind: 'key', terminal: false, view: 'none: the run shows its window' },
  /** The window's timer came due: the append locks the key while the window is closed (or its timer moved). */
  debounceDue: { type: 'debounce.due', kind: 'key', terminal: false, view: 'none' },
  /** Retention took an idle throttle or debounce key's lock to delete it; left behind only if the key became live. */
  keyPruning: { type: 'key.pruning', kind: 'key', terminal: false, view: 'none' },
  /** A start of a batched key (`batching:<wf>:<key>`): the append locks the key while its open batch is read. */
  batchingStarted: { type: 'batching.started', kind: 'key', terminal: false, view: 'none: the run shows its batch' },
  /** A batch's timeout came due: the append locks the key while the batch is closed. */
  batchingDue: { type: 'batching.due', kind: 'key', terminal: false, view: 'none' },
} as const;

type Table = typeof runEventTable & typeof orderingEventTable & typeof keyEventTable;
export type RunEventName = keyof Table;
export type RunEventType = Table[RunEventName]['type'];

/** Each event's type by its name in the tables: `RUN_EVENT.runCompleted === 'run.completed'`. */
export const RUN_EVENT = Object.freeze(
  Object.fromEntries(
    Object.entries({ ...runEventTable, ...orderingEventTable, ...keyEventTable }).map(([name, e]) => [name, e.type]),
  ),
) as { readonly [K in RunEventName]: Table[K]['type'] };

/** Every event type a run's stream holds. */
export const RUN_EVENT_TYPES: string[] = Object.values(runEventTable).map((e) => e.type);

/** The events that end a run: nothing but a late signal or cancel request follows one in its stream. */
export const TERMINAL_RUN_EVENTS: readonly string[] = Object.values(runEventTable)
  .filter((e) => e.terminal)
  .map((e) => e.type);

/** Whether `type` ends a run. */
export function isTerminalEvent(type: string): boolean {
  return TERMINAL_RUN_EVENTS.includes(type);
}
