import { toMs } from '../../duration.js';
import { CancelledError, LeaseLostError, NonDeterminismError, TimeoutError, ValidationError } from '../../errors.js';
import type { NewEvent, Store } from '../../storage/store.js';
import type { GroupLocks } from '../../journal/group-commit.js';
import { branchResults, runAttempt, Suspension } from './calls.js';
import { runStream, type EntryKind, type Seq } from './history.js';
import { pollSchedule, runPoll } from './poll.js';
import { runNode, runStep, type StepHost } from './steps.js';
import { runGenerate, tokensOf } from './generate.js';
import { Patches } from './patches.js';
import { RunWriter } from './writer.js';
import { observeCompensations, observePolls, observeStates, observeStep } from './observe.js';
import type { BranchResult, PollOptions, StepContext, WaitOptions, Workflow, WorkflowContext } from '../workflow.js';
import { withRecorded } from '../workflow.js';
import { runCompensations, type Compensation } from './compensate.js';
import { cancelCompensation } from './confirm.js';
import { deadlineCancel } from './deadline.js';
import { BudgetGate, budgetOf, usageOf, type UsageTotals } from './budget.js';
import { RUN_EVENT } from '../events.js';
import { checkState, recordState, recordValue, runChild, runSleep, runWait, waitSpec, type WaitHost } from './waits.js';
import { PassAborted, type Outcome, type PassOptions } from './types.js';

export { PassAborted, type Children, type Outcome, type PassOptions } from './types.js';

const BRANCH_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** How long code past its run's deadline has to reach its next `ctx` call before the run fails without it. */
const DEADLINE_GRACE_MS = 1000;

/**
 * One execution of a run's workflow code from the top (its `ctx` is `at(root)`): calls the journal already answered
 * return their recorded results; the first new ones do their work and journal it. The pass ends
 * when the code returns or throws, or when every branch waits (a timer, a retry, a signal).
 */
export class Pass {
  readonly runId: string;
  private seq = 0;
  /** Set when the run's deadline has passed: no new work starts, calls throw it. */
  private expired: TimeoutError | null = null;
  private inFlight = 0;
  private readonly wakeAt: number[] = [];
  /** calls waiting on a timer, a retry, a signal or a child run */
  private suspended = 0;
  private readonly compensations: Compensation[] = [];
  private readonly claimedSignals = new Set<number>();
  private readonly lost = new AbortController();
  private readonly stop = new AbortController();
  private cancelled = false;
  private fatal: unknown = null;
  private settle!: (outcome: Outcome) => void;
  private readonly settled = new Promise<Outcome>((resolve) => (this.settle = resolve));
  private checkScheduled = false;

  private deadlineTimer: NodeJS.Timeout | null = null;
  private readonly ended = new AbortController();
  private readonly writer: RunWriter;
  private readonly patches: Patches;

  constructor(private readonly o: PassOptions) {
    this.runId = o.runId;
    this.patches = new Patches({
      history: o.history,
      position: () => this.seq,
      defer: (event) => this.writer.defer(event),
      stop: (reason) => this.fail(new PassAborted(new Error(reason))),
    });
    this.cancelled = o.history.cancelRequested;
    this.budgeted = budgetOf(o.history) !== null;
    this.writer = new RunWriter(o, (error) => {
      if (error instanceof LeaseLostError) this.lost.abort(error);
      this.stop.abort(error);
      this.fail(new PassAborted(error));
    });
  }

  async execute(workflow: Workflow): Promise<Outcome> {
    const { deadline } = this.o.history;
    // the run's timeout: running steps see their signal fire, the code's next call throws (so it can record a failure
    // state), and the run fails, or is cancelled by the system (`onDeadline: 'cancel'`); code that does not get there
    // ends after a grace. Past it already: the code replays (its compensations known) and its first new call throws
    const reach = (): Error => {
      if (workflow.onDeadline !== 'cancel') {
        this.expired = new TimeoutError(`run ${this.runId} timed out`);
        return this.expired;
      }
      if (!this.cancelled) this.writer.defer(deadlineCancel(this.o.history));
      this.cancelled = true;
      return new CancelledError(`run ${this.runId} was cancelled: it reached its deadline`);
    };
    if (deadline !== null && deadline <= this.o.clock.now()) reach();
    else if (deadline !== null) {
      this.deadlineTimer = setTimeout(
        () => {
          const error = reach();
          this.stop.abort(error);
          this.deadlineTimer = setTimeout(() => this.fail(error), DEADLINE_GRACE_MS);
        },
        Math.max(0, deadline - this.o.clock.now()),
      );
      this.wakeAt.push(deadline);
    }
    workflow.run(this.at(this.root), this.o.history.input).then(
      (output) => this.settle(this.fatal ? { kind: 'failed', error: this.fatal } : { kind: 'completed', output }),
      (error) => this.settle({ kind: 'failed', error: this.fatal ?? error }),
    );
    try {
      return await this.settled;
    } finally {
      if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
      this.ended.abort(new PassAborted('the pass ended'));
    }
  }

  get signal(): AbortSignal {
    return this.ended.signal;
  }

  /** Cancellation arrived: running steps see their signal fire, new calls throw CancelledError. */
  cancel(): void {
    this.cancelled = true;
    this.stop.abort(new CancelledError(`run ${this.runId} was cancelled`));
  }

  get isCancelled(): boolean {
    return this.cancelled;
  }

  /** The position of the run's own order the code has reached: a replay checks it got as far as its history. */
  get position(): number {
    return this.seq;
  }

  /** The first call of the code that the journal holds another call at (see `call`): what a replay reports. */
  mismatch: { seq: Seq; kind: EntryKind; name: string } | null = null;

  private readonly root = (): Seq => ++this.seq;

  /** The context whose calls take their positions from `next`: the run's own order, or a branch's. */
  private at(next: () => Seq): WorkflowContext {
    const call = <T>(kind: EntryKind, name: string, work: (seq: Seq) => Promise<T>) =>
      this.call(next(), kind, name, work);
    const context: WorkflowContext = {
      runId: this.runId,
      step: (name, fn, options = {}) => call('step', name, (seq) => runStep(this.host, seq, name, fn, options)),
      generate: (name, options) =>
        call('step', name, async (seq) => {
          const recorded = this.o.history.find(seq, RUN_EVENT.stepCompleted) !== undefined;
          const generation = await runGenerate(this.host, seq, name, options);
          // a fresh answer's tokens count at once (a recorded one's were counted from the history)
          if (!recorded) this.budget.charge({ tokens: tokensOf(generation.usage), cost: generation.usage.cost ?? 0 });
          return generation;
        }),
      sleep: (name, duration) => {
        const ms = toMs(duration, `sleep(${name})`);
        return call('sleep', name, (seq) => runSleep(this.waitHost, seq, name, () => this.o.clock.now() + ms));
      },
      sleepUntil: (name, until) => {
        const at = until instanceof Date ? until.getTime() : until;
        return call('sleep', name, (seq) => runSleep(this.waitHost, seq, name, () => at));
      },
      waitForEvent: <T>(name: string, options: WaitOptions = {}) => {
        const spec = waitSpec(name, options, this.o.history.input);
        return call('wait', name, (seq) => runWait(this.waitHost, seq, name, spec)) as Promise<T | null>;
      },
      child: <I, O>(workflow: Workflow<I, O>, input: I, options: { id?: string } = {}) =>
        call('child', workflow.name, (seq) => runChild(this.waitHost, seq, workflow, input, options.id)) as Promise<O>,
      poll: <T>(name: string, fn: (ctx: StepContext) => Promise<T>, options: PollOptions<T>) => {
        const schedule = pollSchedule(name, options as PollOptions<unknown>);
        return call('poll', name, (seq) => runPoll(this.host, seq, name, fn, options, schedule));
      },
      parallel: (name, branches) => this.runParallel(next(), name, branches) as never,
      setState: (state) => call('state', checkState(state), (seq) => recordState(this.waitHost, seq, state)),
      // not counted in flight: a node whose call waits (an approval, a retry) lets the pass suspend
      node: (name, fn, options = {}) => {
        // a node's completion moves the run's own numbering past its calls: branches number theirs apart
        if (next !== this.root)
          return Promise.reject(new ValidationError(`node(${name})`, 'a node cannot run inside a parallel branch'));
        return this.call(next(), 'node', name, (seq) => runNode(this.host, seq, name, fn, options), false);
      },
      signal: this.ended.signal,
      patched: (id) => this.patches.patched(id),
      deprecatePatch: (id) => this.patches.deprecatePatch(id),
      continueAsNew: (input, options = {}) => this.continueAsNew(input, options.workflow ?? null),
      usage: (used) => call('value', 'usage', (seq) => this.budget.record(seq, used)),
      now: () =>
        call('value', 'now', (seq) =>
          recordValue(this.waitHost, seq, 'now', () => this.o.clock.now()),
        ) as Promise<number>,
      random: () =>
        call('value', 'random', (seq) => recordValue(this.waitHost, seq, 'random', Math.random)) as Promise<number>,
    };
    return next === this.root ? withRecorded(context, () => this.o.history.entries.get(this.seq + 1)) : context;
  }

  /**
   * Branch `b` of the parallel call at `seq` numbers its calls `<seq>.<b>.1`, `.2` … and every
   * branch runs to its end, so each one's outcome (and what it left to compensate) is known.
   */
  private async runParallel(
    seq: Seq,
    name: string,
    branches: Record<string, (ctx: WorkflowContext) => Promise<unknown>>,
  ): Promise<Record<string, BranchResult<unknown>>> {
    const names = Object.keys(branches);
    for (const b of names)
      if (!BRANCH_NAME.test(b))
        throw new ValidationError(`parallel(${name}).${b}`, 'a branch name is 1–64 letters, digits, _ or -');
    const settled = await Promise.allSettled(
      names.map((b) => {
        let n = 0;
        return branches[b]!(this.at(() => `${seq}.${b}.${++n}`));
      }),
    );
    return branchResults(names, settled);
  }

  private madeBudget: BudgetGate | undefined;
  private readonly budgeted: boolean;

  /** The run's usage totals now: with the steps this pass began and the usage it reported (continueAsNew carries them). */
  get usage(): UsageTotals {
    return this.madeBudget ? { ...this.madeBudget.totals } : usageOf(this.o.history);
  }

  /** The run's usage totals and budget, made on the first call that needs them. */
  private get budget(): BudgetGate {
    return (this.madeBudget ??= new BudgetGate(
      {
        history: this.o.history,
        write: (events) => this.write(events),
        now: () => this.o.clock.now(),
        checkLive: () => this.ensureNotCancelled(),
        budgetEvents: async () =>
          (
            await this.o.journal.readStream(runStream(this.runId), {
              // every generation's: what people approved, and the waits' rounds, are the run's
              limit: 1_000_000,
            })
          ).filter((e) => e.type === RUN_EVENT.budgetExceeded || e.type === RUN_EVENT.budgetDecided),
        fail: (error) => this.fail(error),
      },
      budgetOf(this.o.history),
    ));
  }

  private madeWaitHost: WaitHost | undefined;

  /** Made once: a replay of 10,000 recorded values asks for it 10,000 times (measured: 5 → 15 ms per wake-up when made per call). */
  private get waitHost(): WaitHost {
    return (this.madeWaitHost ??= {
      runId: this.runId,
      history: this.o.history,
      claimedSignals: this.claimedSignals,
      children: this.o.children,
      write: (events, also) => this.write(events, also),
      now: () => this.o.clock.now(),
      checkLive: () => this.ensureNotCancelled(),
      entered: observeStates(this.o.observe, this.runId, this.o.history),
    });
  }

  private madeHost: StepHost | undefined;

  /** Made once, like the wait host. */
  private get host(): StepHost {
    this.madeHost ??= {
      runId: this.o.runId,
      history: this.o.history,
      maxEventBytes: this.o.maxEventBytes,
      failuresAfter: 0,
      write: (events, also) => this.write(events, also),
      defer: (event) => this.writer.defer(event),
      attempt: (fn, ctx, timeout) => runAttempt(this.stop.signal, fn, ctx, timeout),
      observe: (name, attempt) => observeStep(this.o, this.runId, name, attempt),
      polled: observePolls(this.o.observe, this.runId, this.o.history),
      now: () => this.o.clock.now(),
      checkLive: () => this.ensureNotCancelled(),
      stopped: () => this.cancelled || this.expired !== null,
      cancelled: () => this.cancelled,
      position: () => this.seq,
      moveTo: (end) => {
        this.seq = Math.max(this.seq, end);
      },
      remember: (seq, name, output, undo) => {
        if (undo) this.compensations.push({ seq, name, output, undo });
      },
      leftRunning: (seq, name, cancel) => {
        if (!this.compensations.some((c) => c.seq === seq))
          this.compensations.push(cancelCompensation(seq, name, cancel));
      },
    };
    return this.madeHost;
  }

  /** Runs the compensations of the completed steps this pass saw, newest first, each once; `wakeAt`: a cancel awaits its confirmation. */
  compensate(): Promise<{ ran: number; failed: number; wakeAt: number | null }> {
    return runCompensations(
      {
        runId: this.runId,
        done: this.o.history.compensated,
        failed: this.o.history.compensationFailed,
        confirming: this.o.history.confirming,
        now: () => this.o.clock.now(),
        write: (events) => this.write(events),
        signal: this.lost.signal,
        ended: observeCompensations(this.o.observe, this.runId, this.o.history),
      },
      this.compensations,
    );
  }

  /** Journals `events` for the run (see RunWriter), doing `also` in the same transaction (`locks`: keys it locks). */
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>, locks?: GroupLocks): Promise<void> {
    return this.writer.write(events, also, locks);
  }

  /** Writes what is deferred: before a pass ends without another write. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Whether an append of this pass brought the run's stream to `version` (a wake-up it caused itself). */
  wrote(version: number): boolean {
    return this.writer.wrote.has(version);
  }

  /** Numbers the call, checks it against the journal, and counts it in flight while it works. */
  private call<T>(seq: Seq, kind: EntryKind, name: string, work: (seq: Seq) => Promise<T>, counted = true): Promise<T> {
    const entry = this.o.history.entries.get(seq);
    if (entry && (entry.kind !== kind || entry.name !== name)) {
      this.mismatch ??= { seq, kind, name };
      const error = new NonDeterminismError(
        `run ${this.runId}: call ${seq} is ${kind} '${name}' in the code but ${entry.kind} '${entry.name}' in the journal`,
      );
      this.fail(error);
      return Promise.reject(error);
    }
    if (counted) this.inFlight += 1;
    // a new step, poll or child call of a run with a budget starts once the budget allows it
    const gated = !entry && this.budgeted && this.budget.gates(kind);
    return (gated ? this.budget.before(kind, name).then(() => work(seq)) : work(seq)).then(
      (value) => {
        if (counted) this.done();
        return value;
      },
      (error) => {
        if (counted) this.done();
        if (!(error instanceof Suspension)) throw error;
        this.wakeAt.push(error.until);
        this.suspended += 1;
        if (!counted) this.check();
        return new Promise<never>(() => {});
      },
    );
  }

  /** The pass ends with the run continuing as new; the runtime writes the switch (see Runtime.continued). */
  private continueAsNew(input: unknown, workflow: Workflow | null): Promise<never> {
    if (this.inFlight > 0) {
      const error = new ValidationError(
        'continueAsNew',
        `called while ${this.inFlight} other ctx call(s) are in flight: await them first`,
      );
      this.fail(error);
      return Promise.reject(error);
    }
    this.settle({ kind: 'continued', input: input ?? null, workflow });
    return new Promise<never>(() => {});
  }

  private fail(error: unknown): void {
    this.fatal ??= error;
    this.settle({ kind: 'failed', error: this.fatal });
  }

  /** When nothing is in flight and some call waits, the pass is suspended (checked after pending callbacks run). */
  private done(): void {
    this.inFlight -= 1;
    this.check();
  }

  private check(): void {
    if (this.checkScheduled) return;
    this.checkScheduled = true;
    setImmediate(() => {
      this.checkScheduled = false;
      if (this.inFlight > 0 || this.suspended === 0) return;
      const finite = this.wakeAt.filter((t) => Number.isFinite(t));
      this.settle({ kind: 'suspended', wakeAt: finite.length > 0 ? Math.min(...finite) : null });
    });
  }

  private ensureNotCancelled(): void {
    if (this.cancelled) throw new CancelledError(`run ${this.runId} was cancelled`);
    if (this.expired) throw this.expired;
    // paused: the next pass (held back by the claim until the resume) takes it from here
    if (this.o.held?.()) throw new Suspension(this.o.clock.now());
  }
}
