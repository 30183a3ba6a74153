import { resolveConfig, type Config, type RunledgerOptions } from './config.js';
import { Journal } from './journal/journal.js';
import { Liveness } from './liveness.js';
import { Subscriber, type EventHandler, type SubscribeOptions } from './journal/subscription.js';
import { TaskQueue } from './queue/queue.js';
import type { TaskHandler, WorkOptions } from './queue/handler.js';
import type { Worker } from './queue/worker.js';
import { RUN_QUEUE, Runtime, type RunHandle, type StartOptions } from './runtime/runtime.js';
import type { RunView } from './runtime/read/view.js';
import { RunReads } from './runtime/read/reads.js';
import { observeFlow } from './runtime/flow-observe.js';
import { Operator } from './runtime/operate/operator.js';
import { AuditTrail } from './runtime/operate/audit.js';
import { RateLimits } from './runtime/rates/limits.js';
import { advertise } from './runtime/start/versions.js';
import { DEBOUNCE_QUEUE, debounceTimer } from './runtime/start/debounce.js';
import type { StartInput } from './runtime/flow.js';
import { BATCH_QUEUE, batchTimer } from './runtime/start/batch.js';
import type { Workflow } from './runtime/workflow.js';
import { openStore } from './storage/open.js';
import type { ParkedEvent, Store } from './storage/store.js';
import { EngineEvents, type EngineEventName, type EngineListener } from './observe/events.js';
import { timedStore } from './storage/timed.js';
import type { Observe, Tracer } from './observe/trace.js';
import { Retention } from './retention/retention.js';

/**
 * One runledger instance: a store, the journal over it, the task queue, and the workers and
 * subscriptions this process runs. Create as many as you need; nothing is global.
 *
 * @example
 * const engine = await createEngine({ database: 'runledger.db' });
 * await engine.queue.enqueue('email', { to: 'a@b.c' });
 * engine.work('email', async (payload) => ({ sent: true }));
 */
export class Engine {
  readonly journal: Journal;
  readonly queue: TaskQueue;
  readonly runtime: Runtime;
  /** Reading runs: list, tail, wait for and view them (the read door; faces never read the store). */
  readonly runs: RunReads;
  /** Pause and resume, bulk cancel, retry and redrive: journaled with who and why. */
  readonly operator: Operator;
  /** This process's row in the database: its leases end seconds after it dies, not a whole lease later. */
  readonly liveness: Liveness;
  /** Named rate limits steps take (`rateLimit` of a step), shared by every process on the database. */
  readonly limits: RateLimits;
  private readonly workers = new Set<Worker>();
  private readonly subscribers = new Set<Subscriber>();
  private runWorker: Worker | null = null;
  /** The lifecycle events of this engine (see `on`). */
  readonly events = new EngineEvents();
  /** What the runtime reads spans from: `tracer` stays null (no spans, no cost) unless `useTracer` sets one. */
  readonly observe: Observe = { events: this.events, tracer: null };
  /**
   * The store under the journal. @internal: not in the package's types (`stripInternal`); app/ and
   * testing/ hand it to the features they assemble, every other part reads through the doors above
   * (`journal`, `runs`, `operator`, `queue`): src/floors.test.ts holds the code to that.
   */
  readonly store: Store;
  /** Deletes finished records by a policy (`runledger prune`, RUNLEDGER_RETENTION); features add their kinds. */
  readonly retention: Retention;
  /** Who did what through the API, when, from where, with which outcome (`GET /audit`). */
  readonly audit: AuditTrail;
  private stopAdvertising: (() => Promise<void>) | null = null;

  constructor(
    readonly config: Config,
    store: Store,
    workflows: Workflow[] = [],
    private readonly runWorkers = true,
  ) {
    this.store = timedStore(store, this.events);
    store = this.store;
    this.journal = new Journal(store, config, this.events);
    this.queue = new TaskQueue(store, this.journal, { ...config, maxBatch: config.maxEventsPerAppend });
    this.runtime = new Runtime(store, this.journal, this.queue, [], { ...config, observe: this.observe });
    observeFlow(this.journal, this.events);
    this.operator = new Operator(store, this.journal, this.queue, this.runtime);
    this.runs = new RunReads(store, this.journal, this.runtime);
    this.limits = new RateLimits(store);
    this.audit = new AuditTrail(store);
    this.retention = new Retention(store, this.journal, this.runtime, this.events);
    // the leases of a dead process were ended: a worker here expires them now, not at its next sweep
    this.liveness = new Liveness(store, { onEnded: () => void [...this.workers][0]?.expireLeases().catch(() => {}) });
    this.register(...workflows);
  }

  /** Makes workflows runnable here; the first one starts this process's run worker (unless `workers: false`). */
  register(...workflows: Workflow[]): void {
    for (const wf of workflows) this.runtime.register(wf);
    if (workflows.length === 0 || !this.runWorkers || this.runWorker) return;
    // a pass that throws met the infrastructure (the database went away): try again soon
    const backoff = { baseMs: 100, factor: 2, maxMs: 10_000, jitter: 0.2 };
    this.runWorker = this.work(RUN_QUEUE, this.runtime.execute, {
      leaseMs: this.config.leaseMs,
      concurrency: this.config.runConcurrency,
      backoff,
      tags: () => this.runtime.tags(),
    });
    // debounced runs' windows close here: a window's timer moves its run's parked pass to now
    this.work(DEBOUNCE_QUEUE, debounceTimer(this), { leaseMs: this.config.leaseMs, backoff });
    // a batch's timeout closes it here, its run's parked pass moved to now
    this.work(BATCH_QUEUE, batchTimer(this), { leaseMs: this.config.leaseMs, backoff });
    this.stopAdvertising = advertise(
      this.store,
      this.runWorker.id,
      () => this.runtime.tags(),
      Math.min(10_000, this.config.leaseMs),
      () => {},
    );
  }

  /**
   * Listens to one lifecycle event of this engine; returns the function that stops listening.
   *
   * @example const off = engine.on('run:end', ({ workflow, outcome }) => console.log(workflow, outcome));
   */
  on<K extends EngineEventName>(name: K, listener: EngineListener<K>): () => void {
    return this.events.on(name, listener);
  }

  /** Spans for runs and steps from now on (`startTracing` makes one from the OTEL_* environment). */
  useTracer(tracer: Tracer | null): void {
    this.observe.tracer = tracer;
  }

  /** Starts a run of `workflow`; an existing `id` returns that run's handle. */
  start<I, O>(workflow: Workflow<I, O>, input: StartInput<I>, options: StartOptions = {}): Promise<RunHandle<O>> {
    return this.runtime.start(workflow, input, options);
  }

  /** Sends a signal to a run's `waitForEvent(name)`. */
  signal(
    runId: string,
    name: string,
    payload: unknown,
    options: { idempotencyKey?: string; tx?: Store } = {},
  ): Promise<{ duplicate: boolean }> {
    return this.runtime.signal(runId, name, payload, options);
  }

  /** Cancels a run; `reason` is journaled with the request (`run.cancel_requested`). */
  cancel(runId: string, options: { reason?: string; tx?: Store } = {}): Promise<void> {
    return this.runtime.cancel(runId, options.reason, {}, options.tx);
  }

  /** A run's status and steps. */
  run(runId: string): Promise<RunView> {
    return this.runtime.view(runId);
  }

  /** Starts a worker for `queue` in this process; `close()` stops it. */
  work(queue: string, handler: TaskHandler, options: WorkOptions = {}): Worker {
    void this.liveness.start().catch(() => {});
    const onError = (error: unknown) => this.events.emit('engine:error', { what: `worker ${queue}`, error });
    const worker = this.queue.work(queue, handler, {
      pollMs: this.config.pollMs,
      workerId: this.liveness.leaseHolder('worker'),
      events: this.events,
      onError,
      ...options,
    });
    this.workers.add(worker);
    return worker;
  }

  /** Starts a durable subscription in this process; `close()` stops it. */
  async subscribe(name: string, options: SubscribeOptions, handler: EventHandler): Promise<Subscriber> {
    void this.liveness.start().catch(() => {});
    const onError = (error: unknown) => this.events.emit('engine:error', { what: `subscription ${name}`, error });
    const subscriber = new Subscriber(
      this.store,
      name,
      {
        pollMs: this.config.pollMs,
        leaseMs: this.config.leaseMs,
        owner: this.liveness.leaseHolder('owner'),
        events: this.events,
        onError,
        ...options,
      },
      handler,
    );
    await subscriber.start();
    this.subscribers.add(subscriber);
    return subscriber;
  }

  /** Events a subscription gave up on (or that block an ordered one). */
  parked(subscription: string): Promise<ParkedEvent[]> {
    return this.store.parkedList({ subscription });
  }

  /** Asks the subscription to deliver a parked event again (an ordered one resumes from it). */
  retryParked(subscription: string, position: number): Promise<ParkedEvent> {
    return this.store.parkedSetStatus({ subscription, position, status: 'retry' });
  }

  /** Gives up on a parked event for good (an ordered subscription moves past it). */
  skipParked(subscription: string, position: number): Promise<ParkedEvent> {
    return this.store.parkedSetStatus({ subscription, position, status: 'skipped' });
  }

  /** Stops this process's workers (letting running tasks finish) and subscriptions, then closes the store. */
  async close(): Promise<void> {
    await this.retention.stop();
    await Promise.all([...this.workers].map((w) => w.stop()));
    await this.stopAdvertising?.();
    await Promise.all([...this.subscribers].map((s) => s.stop()));
    this.workers.clear();
    this.subscribers.clear();
    await this.liveness.stop().catch(() => {});
    await this.store.close();
  }
}

/**
 * The engine's store, for what assembles an engine's parts: app/, testing/ and the bench (the
 * `store` field is stripped from the package's types, so code built against them reaches it here).
 * Not exported from the package's index; src/floors.test.ts keeps the rest of src/ off it.
 */
export function engineStore(engine: Engine): Store {
  return engine.store;
}

/**
 * Opens the store and starts this process's run workers (unless `workers: false`, for a process
 * that only starts and inspects runs). A SQLite file's directory must exist, unless `createDirs: true`.
 */
export async function createEngine(
  options: RunledgerOptions & { workflows?: Workflow[]; workers?: boolean; createDirs?: boolean } = {},
): Promise<Engine> {
  const { workflows, workers, createDirs, ...rest } = options;
  const config = resolveConfig(rest);
  const engine = new Engine(config, await openStore(config.database, { createDirs }), workflows, workers ?? true);
  // before its workers claim anything: the leases of this machine's dead processes (its own previous
  // incarnation after a kill -9) end now
  await engine.liveness.start();
  return engine;
}
