import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import { checkName } from '../json.js';
import type { EnqueueResult, TaskQueue } from '../queue/queue.js';
import type { TaskContext } from '../queue/handler.js';
import type { Store, Task } from '../storage/store.js';
import { type History, runStream } from './pass/history.js';
import type { Observe } from './pass/observe.js';
import type { Children } from './pass/pass.js';
import { PassDriver, type PassRuntime } from './pass/driver.js';
import { isTerminal, projectRunViews, readRunView, runPass, type CommittedViews, type RunView } from './read/view.js';
import { Blobs, resolveView } from './pass/blobs.js';
import { ReplayCache } from './pass/cache.js';
import { projectPatches } from './pass/patches.js';
import { forgetKeys, startKeyed, type Keyed, type KeyedStart } from './start/keyed.js';
import { RUN_GENERATION } from './pass/generations.js';
import { RUN_TAG, versionTag } from './start/versions.js';
import type { Workflow } from './workflow.js';
import { RUN_EVENT } from './events.js';
import { watchCancel } from './pass/cancel-watch.js';
import { claimsOf, LimitReachedError, release, type LimitHost } from './start/limits.js';
import { passTask, RUN_QUEUE, Starts, type StartOptions } from './start/start.js';
import { delayOf, type DelayedHost } from './start/delayed.js';
import type { StartInput } from './flow.js';
import { inOpenWindow, startDebounced } from './start/debounce.js';
import { batchOf, inOpenBatch, startBatched } from './start/batch.js';
import { startThrottled } from './start/throttle.js';
import { ResultWaiters } from './results.js';

export { RUN_QUEUE, type StartOptions } from './start/start.js';

export interface RunHandle<O = unknown> {
  readonly id: string;
  /** Waits for the run to end: its output, or the error it failed with (`CancelledError` when cancelled). */
  result(options?: { pollMs?: number }): Promise<O>;
  view(): Promise<RunView>;
}

/**
 * Durable workflow runs on the journal and the task queue. A run is the stream `run:<id>`; every
 * `ctx` call of its code is journaled there, so a pass after any crash replays to where it was.
 *
 * @example
 * const runtime = new Runtime(store, journal, queue, [onboard], { leaseMs: 30_000, maxEventBytes: 1 << 20, pollMs: 1000 });
 * const run = await runtime.start(onboard, { userId: 'u1' }, { id: 'onboard-u1' });
 * await run.result();
 */
export class Runtime {
  /** By tag (`name@version`): a process may hold several versions of one workflow. */
  private readonly workflows = new Map<string, Workflow>();
  /** Values too big for an event: run inputs and results, step inputs and outputs, signal payloads. */
  readonly blobs: Blobs;
  /** Histories of the runs this process ran last: a wake-up reads the new events only. */
  readonly cache: ReplayCache;
  /** Runs the passes; its `passes` are those running here, by run id: a waiter here need not read after their writes. */
  private readonly driver: PassDriver;
  /** The tasks of the passes begun here, their cancel watch listening. */
  private readonly begun = new Set<Task>();
  /** `result` waiters here, and the passes begun here that wake them. */
  private readonly results: ResultWaiters;
  /** The run views this process committed last: a waiter woken by one of its commits takes it. */
  private readonly views: CommittedViews;
  private readonly starts: Starts;

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly queue: TaskQueue,
    workflows: Workflow[],
    private readonly options: {
      leaseMs: number;
      maxEventBytes: number;
      pollMs: number;
      observe?: Observe;
      blobThresholdBytes?: number;
      maxValueBytes?: number;
      replayCacheRuns?: number;
    },
  ) {
    this.cache = new ReplayCache({ maxRuns: options.replayCacheRuns ?? 500, maxEvents: 1_000_000 });
    // what would not fit in an event beside the rest of its data goes to the blob store whatever the threshold
    this.blobs = new Blobs(store, {
      thresholdBytes: Math.min(options.blobThresholdBytes ?? 256 * 1024, Math.floor(options.maxEventBytes / 2)),
    });
    for (const wf of workflows) this.register(wf);
    this.views = projectRunViews(journal);
    projectPatches(journal);
    this.starts = new Starts({
      store,
      journal,
      queue,
      blobs: this.blobs,
      cache: this.cache,
      begun: this.begun,
      registered: (tag) => this.workflows.has(tag),
      limits: this.limits,
    });
    const runtime: PassRuntime = {
      workflowOf: (history) => this.workflowOf(history),
      registered: (tag) => this.workflows.has(tag),
      ended: (tx, history, id) => this.ended(tx, history, id),
      wake: (tx, id, at) => this.wake(tx, id, at),
      enqueuePass: (tx, id, at, knownTag, priority) => this.enqueuePass(tx, id, at, knownTag, priority),
    };
    const parts = { blobs: this.blobs, cache: this.cache, children: this.children };
    // the driver spreads these options into each Pass, as they are
    this.driver = new PassDriver(store, journal, runtime, parts, options);
    this.results = new ResultWaiters({
      ...{ journal, blobs: this.blobs, views: this.views },
      wrote: (id, version) => this.driver.passes.get(id)?.wrote(version),
      stored: (id) => this.stored(id),
    });
  }

  /** The workflow registered here as `name`, if any: of several versions, the one registered last (new runs start on it). */
  registered(name: string): Workflow | undefined {
    return [...this.workflows.values()].filter((wf) => wf.name === name).at(-1);
  }

  /** The names of the workflows registered here, sorted. */
  names(): string[] {
    return [...new Set([...this.workflows.values()].map((wf) => wf.name))].sort();
  }

  /** Makes `wf` runnable by this process's passes; versions of one workflow may be registered side by side. */
  register(wf: Workflow): void {
    const tag = versionTag(wf.name, wf.version);
    if (this.workflows.has(tag))
      throw new ValidationError('workflows', `two workflows are named '${wf.name}' with version '${wf.version}'`);
    this.workflows.set(tag, wf);
  }

  /** The tags of the versions this process runs: its run worker claims passes of these only. */
  tags(): string[] {
    return [...this.workflows.keys()];
  }

  /** Starts a run. An id that exists returns the existing run's handle and starts nothing. Runs with the same ordering key run one at a time, in start order; a timeout fails the run when it passes. */
  async start<I, O>(wf: Workflow<I, O>, input: StartInput<I>, options: StartOptions = {}): Promise<RunHandle<O>> {
    // a throttled or debounced start takes its key's lock in its own transaction (nested in the caller's)
    const delay = delayOf(wf, options);
    const host = (): DelayedHost => ({
      ...{ store: this.store, journal: this.journal, queue: this.queue, blobs: this.blobs },
      begin: (tx, wf, input, options) => this.starts.in(tx, wf, input, options),
    });
    if (delay && 'debounce' in delay)
      return this.handle<O>(await startDebounced(host(), wf, input, options, delay.debounce));
    const batch = batchOf(wf, options);
    if (batch) return this.handle<O>(await startBatched(host(), wf, input, options, batch));
    const id = options.id === undefined ? newId('run') : checkName('id', options.id, 200);
    try {
      if (delay) await startThrottled(host(), wf, input, { ...options, id }, delay.throttle);
      // in a caller's transaction, a nested one: a run that exists leaves the caller's transaction whole
      else if (options.tx) await options.tx.transaction((tx) => this.starts.in(tx, wf, input, { ...options, id }));
      else await this.starts.shared(wf, input, { ...options, id });
    } catch (error) {
      if (!(error instanceof ConflictError) || error instanceof LimitReachedError) throw error;
    }
    return this.handle<O>(id);
  }

  /**
   * Starts a run for (scope, key) once: the run id the key's stream names (see `startKeyed`).
   *
   * @example const { runId } = await runtime.startKeyed({ scope: 'orders', key: 'o-1', name: async () => ({ runId: newId('run') }), begin: async (tx, id) => void (await runtime.start(wf, input, { id, tx })) });
   */
  startKeyed(p: KeyedStart): Promise<Keyed> {
    return startKeyed(this.journal, this.store, p);
  }

  /**
   * In the transaction that ends a run: it gives back its slots (its ordering key's, its concurrency limits'), the runs
   * waiting for them begin, and a parent waiting for it wakes.
   */
  private async ended(tx: Store, history: History, id: string): Promise<void> {
    const claims = claimsOf(history.flow, history.orderingKey);
    if (claims.length > 0) await release(this.limits, tx, id, claims);
    if (history.parent !== null) await this.wake(tx, history.parent.runId, await tx.now());
  }

  /** What keyed concurrency needs here: a run let into its slots begins, one cancelled for a newer one wakes. */
  private get limits(): LimitHost {
    return {
      journal: this.journal,
      begin: async (tx, id, notBefore, pass) => {
        // no notBefore: due now, the clock not asked
        const at = notBefore !== null && notBefore > (await tx.now()) ? notBefore : null;
        await this.enqueuePass(tx, id, at, pass?.tag, pass?.priority);
      },
      wake: async (tx, id) => this.wake(tx, id, await tx.now()),
    };
  }

  private readonly children: Children = {
    start: (tx, wf, input, id, parent) => this.starts.in(tx, wf, input, { id, parent }),
    view: (id) => readRunView(this.store, id),
  };

  handle<O = unknown>(id: string): RunHandle<O> {
    return { id, result: (options) => this.results.result<O>(id, options?.pollMs), view: () => this.view(id) };
  }

  /** A run as people read it, its big values whole (the view itself holds references). */
  async view(id: string): Promise<RunView> {
    return resolveView(this.blobs, await this.stored(id));
  }

  /** The view as stored: big values as references. */
  private async stored(id: string, tx?: Store): Promise<RunView> {
    const view = await readRunView(tx ?? this.store, id);
    if (!view) throw new NotFoundError(`run ${id} not found`);
    return view;
  }

  /**
   * Sends signal `name` to a run; a repeated idempotency key is ignored (`duplicate`). Consumed by one `waitForEvent`.
   * With `tx`, in the caller's transaction.
   */
  async signal(
    id: string,
    name: string,
    payload: unknown,
    options: { idempotencyKey?: string; tx?: Store } = {},
  ): Promise<{ duplicate: boolean }> {
    checkName('name', name);
    const view = await this.stored(id, options.tx);
    return this.within(options.tx, async (tx) => {
      const key =
        options.idempotencyKey === undefined
          ? undefined
          : `signal:${id}:${checkName('idempotencyKey', options.idempotencyKey)}`;
      const stored = await this.blobs.offload(tx, id, payload ?? null);
      const appended = await this.journal.append(
        runStream(id),
        [{ type: RUN_EVENT.signalSent, data: { name, payload: stored } }],
        { tx, ...(key ? { idempotencyKey: key } : {}) },
      );
      // a debounced (batched) run begins only once its window (batch) closed, which moves its pass: it reads the signal then
      const parked = (await inOpenWindow(this.journal, tx, view)) || (await inOpenBatch(this.journal, tx, view));
      if (!appended.duplicate && !parked) await this.wake(tx, id, await tx.now());
      return { duplicate: appended.duplicate };
    });
  }

  /**
   * Signal-with-start: starts run `id` of `wf` with `input` unless it exists, and sends it signal `name`, in one
   * transaction (a concurrent start of the same id makes one of them find it). `started`: this call started it. A run
   * of `id` that is of another workflow, or has ended, is a ConflictError and nothing is written.
   */
  async signalWithStart(
    id: string,
    wf: Workflow,
    input: unknown,
    signal: { name: string; payload: unknown; idempotencyKey?: string },
  ): Promise<{ started: boolean; duplicate: boolean }> {
    checkName('id', id, 200);
    return this.store.transaction(async (tx) => {
      let started = false;
      if (!(await readRunView(tx, id)))
        // nested: a concurrent start that took the id first leaves this transaction whole, and this one signals it
        started = await tx
          .transaction((nested) => this.starts.in(nested, wf, input, { id }).then(() => true))
          .catch((error) => (error instanceof ConflictError ? false : Promise.reject(error)));
      const run = await this.stored(id, tx);
      if (run.workflow !== wf.name)
        throw new ConflictError(`run ${id} exists and is a run of '${run.workflow}', not '${wf.name}'`);
      if (isTerminal(run.status))
        throw new ConflictError(`run ${id} has already ended (${run.status}): nothing waits for '${signal.name}'`);
      const { name, payload, idempotencyKey } = signal;
      const sent = await this.signal(id, name, payload, { tx, ...(idempotencyKey ? { idempotencyKey } : {}) });
      return { started, duplicate: sent.duplicate };
    });
  }

  /**
   * Cancels a run: its running step's signal fires, no new step starts, compensations run. A finished run → ConflictError.
   * `also` is journaled with the request for the run's compensations to read (a stored workflow's `delete_artifacts`).
   * With `tx`, in the caller's transaction.
   */
  async cancel(id: string, reason = 'cancelled', also: Record<string, unknown> = {}, tx?: Store): Promise<void> {
    const view = await this.stored(id, tx);
    if (isTerminal(view.status)) throw new ConflictError(`run ${id} has already ended (${view.status})`);
    await this.within(tx, async (tx) => {
      const data = { ...also, reason };
      await this.journal.append(runStream(id), [{ type: RUN_EVENT.runCancelRequested, data }], { tx });
      await this.wake(tx, id, await tx.now());
    });
  }

  private within<T>(tx: Store | undefined, work: (tx: Store) => Promise<T>): Promise<T> {
    return tx ? work(tx) : this.store.transaction(work);
  }

  /**
   * Starts ended run `id` again as a new run: the same workflow, version and input (its ordering key and parent are not
   * carried), linked by `retryOf`. Needs no code here: a worker with the version runs it. Returns the new run's id.
   */
  async restart(id: string, actor: { by: string; reason: string }): Promise<string> {
    const [started] = await this.journal.readStream(runStream(id), { limit: 1 });
    if (!started || started.type !== RUN_EVENT.runStarted) throw new NotFoundError(`run ${id} not found`);
    const from = started.data as {
      workflow: string;
      version?: string;
      input: unknown;
      cancelOn?: unknown;
      pauseKey?: string;
    };
    const next = newId('run');
    await this.store.transaction(async (tx) => {
      const data = {
        workflow: from.workflow,
        ...(from.version ? { version: from.version } : {}),
        input: from.input,
        // the business events that cancel it cancel the restarted run too
        ...(from.cancelOn ? { cancelOn: from.cancelOn } : {}),
        ...(from.pauseKey ? { pauseKey: from.pauseKey } : {}),
        orderingKey: null,
        deadline: null,
        parent: null,
        retryOf: id,
        retriedBy: actor,
      };
      await this.journal.append(runStream(next), [{ type: RUN_EVENT.runStarted, data }], { tx, expectedVersion: 0 });
      await this.blobs.adopt(tx, next, from.input);
      await this.enqueuePass(tx, next, null, from.version ? versionTag(from.workflow, from.version) : undefined);
    });
    return next;
  }

  /** In the transaction that deletes run `id` (retention): the rows kept for it here, and the blob chunks no other run holds. */
  async forget(tx: Store, id: string): Promise<void> {
    await forgetKeys(tx, id);
    // written before a run's tag came from its view: rows of runs started by earlier versions
    await tx.projectionDelete({ name: RUN_TAG, key: id });
    await tx.projectionDelete({ name: RUN_GENERATION, key: id });
    await tx.blobDelete({ owner: id });
  }

  /** The task handler of RUN_QUEUE: one pass of one run. */
  readonly execute = async (payload: { runId: string }, ctx: TaskContext): Promise<unknown> => {
    // listening before the history is read: a cancellation committed after that read wakes the watch
    const listening = watchCancel(this.journal, payload.runId, this.options.pollMs);
    this.begun.add(ctx.task);
    this.results.begin(payload.runId);
    let ended = false;
    try {
      const watch = await listening;
      ended = await this.driver.run(payload.runId, ctx, watch).finally(() => watch.stop());
      return null;
    } finally {
      this.begun.delete(ctx.task);
      this.results.end(payload.runId, ended);
    }
  };

  /** Schedules the run's next pass at `at`, or moves its waiting pass earlier. */
  private async wake(tx: Store, id: string, at: number): Promise<void> {
    const moved = await tx.taskReschedule({ queue: RUN_QUEUE, orderingKey: id, runAt: at });
    if (moved === 0) await this.enqueuePass(tx, id, at);
  }

  /** A pass of run `id`, tagged with its version so that only a worker that has that version runs it: the version its view names (its start's or, after `continueAsNew`, its generation's). */
  private async enqueuePass(
    tx: Store,
    id: string,
    at: number | null,
    knownTag?: string,
    knownPriority?: number,
  ): Promise<EnqueueResult> {
    // a known tag spares the view's read, unless its workflow keeps a pause key with its runs (runledger.stored)
    const { tag, priority, pauseKey } =
      knownTag === undefined || this.workflows.get(knownTag)?.pauseKey
        ? await runPass(tx, id)
        : { tag: knownTag, priority: knownPriority ?? 0, pauseKey: null };
    return this.queue.enqueue(
      RUN_QUEUE,
      { runId: id },
      { tx, ...passTask(id, tag ?? null, priority, pauseKey), ...(at === null ? {} : { runAt: at }) },
    );
  }

  /** The code a pass runs: the run's own version; a run from before versions takes the one version registered. */
  private workflowOf(history: History): Workflow | undefined {
    if (history.codeVersion !== null) return this.workflows.get(versionTag(history.workflow, history.codeVersion));
    return [...this.workflows.values()].find((wf) => wf.name === history.workflow);
  }
}
