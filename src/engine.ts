import { resolveConfig, type Config, type RunledgerOptions } from './config.js';
import { Journal } from './journal/journal.js';
import { Subscriber, type EventHandler, type SubscribeOptions } from './journal/subscription.js';
import { TaskQueue } from './queue/queue.js';
import type { TaskHandler, WorkOptions, Worker } from './queue/worker.js';
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
  private readonly workers = new Set<Worker>();
  private readonly subscribers = new Set<Subscriber>();

  constructor(
    readonly config: Config,
    readonly store: Store,
  ) {
    this.journal = new Journal(store, config);
    this.queue = new TaskQueue(store, this.journal, { ...config, maxBatch: config.maxEventsPerAppend });
  }

  /** Starts a worker for `queue` in this process; `close()` stops it. */
  work(queue: string, handler: TaskHandler, options: WorkOptions = {}): Worker {
    const worker = this.queue.work(queue, handler, { pollMs: this.config.pollMs, ...options });
    this.workers.add(worker);
    return worker;
  }

  /** Starts a durable subscription in this process; `close()` stops it. */
  async subscribe(name: string, options: SubscribeOptions, handler: EventHandler): Promise<Subscriber> {
    const subscriber = new Subscriber(this.store, name, { pollMs: this.config.pollMs, ...options }, handler);
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
    await Promise.all([...this.subscribers].map((s) => s.stop()));
    this.workers.clear();
    this.subscribers.clear();
    await this.store.close();
  }
}

export async function createEngine(options: RunledgerOptions = {}): Promise<Engine> {
  const config = resolveConfig(options);
  return new Engine(config, await openStore(config.database));
}
