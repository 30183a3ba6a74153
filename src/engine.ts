import { resolveConfig, type Config, type RunledgerOptions } from './config.js';
import { Journal } from './journal/journal.js';
import { Subscriber, type EventHandler, type SubscribeOptions } from './journal/subscription.js';
import { TaskQueue } from './queue/queue.js';
import type { TaskHandler, WorkOptions, Worker } from './queue/worker.js';
import { RUN_QUEUE, Runtime, type RunHandle, type StartOptions } from './runtime/runtime.js';
import type { RunView } from './runtime/view.js';
import { Operator } from './runtime/operator.js';
import { advertise } from './runtime/versions.js';
import type { Workflow } from './runtime/workflow.js';
import { openStore } from './storage/open.js';
import type { ParkedEvent, Store } from './storage/store.js';

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
  /** Pause and resume, bulk cancel, retry and redrive: journaled with who and why. */
  readonly operator: Operator;
  private readonly workers = new Set<Worker>();
  private readonly subscribers = new Set<Subscriber>();
  private runWorker: Worker | null = null;
  private stopAdvertising: (() => Promise<void>) | null = null;

  constructor(
    readonly config: Config,
    readonly store: Store,
    workflows: Workflow[] = [],
    private readonly runWorkers = true,
  ) {
    this.journal = new Journal(store, config);
    this.queue = new TaskQueue(store, this.journal, { ...config, maxBatch: config.maxEventsPerAppend });
    this.runtime = new Runtime(store, this.journal, this.queue, [], config);
    this.operator = new Operator(store, this.journal, this.queue, this.runtime);
    this.register(...workflows);
  }

  /** Makes workflows runnable here; the first one starts this process's run worker (unless `workers: false`). */
  register(...workflows: Workflow[]): void {
    for (const wf of workflows) this.runtime.register(wf);
    if (workflows.length === 0 || !this.runWorkers || this.runWorker) return;
    // a pass that throws met the infrastructure (the database went away): try again soon
    const backoff = { baseMs: 100, factor: 2, maxMs: 10_000, jitter: 0.2 };
    this.runWorker = this.work(RUN_QUEUE, this.runtime.execute, { leaseMs: this.config.leaseMs, concurrency: this.config.runConcurrency, backoff, tags: () => this.runtime.tags() });
    this.stopAdvertising = advertise(this.store, this.runWorker.id, () => this.runtime.tags(), Math.min(10_000, this.config.leaseMs), () => {});
  }

  /** Starts a run of `workflow`; an existing `id` returns that run's handle. */
  start<I, O>(workflow: Workflow<I, O>, input: I, options: StartOptions = {}): Promise<RunHandle<O>> {
    return this.runtime.start(workflow, input, options);
  }

  /** Sends a signal to a run's `waitForEvent(name)`. */
  signal(runId: string, name: string, payload: unknown, options: { idempotencyKey?: string } = {}): Promise<{ duplicate: boolean }> {
    return this.runtime.signal(runId, name, payload, options);
  }

  cancel(runId: string): Promise<void> {
    return this.runtime.cancel(runId);
  }

  /** A run's status and steps. */
  run(runId: string): Promise<RunView> {
    return this.runtime.view(runId);
  }

  /** Starts a worker for `queue` in this process; `close()` stops it. */
  work(queue: string, handler: TaskHandler, options: WorkOptions = {}): Worker {
    const worker = this.queue.work(queue, handler, { pollMs: this.config.pollMs, ...options });
    this.workers.add(worker);
    return worker;
  }

  /** Starts a durable subscription in this process; `close()` stops it. */
  async subscribe(name: string, options: SubscribeOptions, handler: EventHandler): Promise<Subscriber> {
    const subscriber = new Subscriber(this.store, name, { pollMs: this.config.pollMs, leaseMs: this.config.leaseMs, ...options }, handler);
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
    await Promise.all([...this.workers].map((w) => w.stop()));
    await this.stopAdvertising?.();
    await Promise.all([...this.subscribers].map((s) => s.stop()));
    this.workers.clear();
    this.subscribers.clear();
    await this.store.close();
  }
}

/**
 * Opens the store and starts this process's run workers (unless `workers: false`, for a process
 * that only starts and inspects runs).
 */
export async function createEngine(options: RunledgerOptions & { workflows?: Workflow[]; workers?: boolean } = {}): Promise<Engine> {
  const { workflows, workers, ...rest } = options;
  const config = resolveConfig(rest);
  return new Engine(config, await openStore(config.database), workflows, workers ?? true);
}
