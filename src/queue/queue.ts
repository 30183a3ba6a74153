import { ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import { checkJson, checkName } from '../json.js';
import type { NewTask, StoredEvent, Store, Task, TaskClaim, TaskState } from '../storage/store.js';
import type { QueueLimit, TaskConcurrency, TaskOnLimit } from '../storage/tasks.js';
import { checkQueueName, taskEvent, taskStream } from './lifecycle.js';
import type { TaskHandler, WorkOptions } from './handler.js';
import { batchHandler, checkTaskBatch, type BatchTaskHandler } from './batch.js';
import { Worker } from './worker.js';
import { RemoteWorkers, type RemoteOptions } from './remote.js';
import { checkTaskRates, ratedHandler, taskRate, type TaskRateOption } from './task-rate.js';

export interface EnqueueOptions {
  /** A repeated key (per queue) returns the original task and writes nothing. */
  idempotencyKey?: string;
  /** Tasks with the same key run one at a time, in arrival order. */
  orderingKey?: string;
  /** Not before this time. */
  runAt?: Date | number;
  /**
   * Higher runs first; FIFO within a priority. A waiting task ages: it goes before tasks of a priority
   * up to one point higher per 10 s it has waited (`AGING_STEP_MS`), so low priority is delayed, never starved.
   */
  priority?: number;
  /**
   * At most `limit` tasks of `key` in this queue run at once, across every process; the others wait
   * in arrival order and are claimed as slots free up (a dead worker's slot within the liveness sweep's seconds).
   * `onLimit` when the key is full (as many of its tasks waiting or running as `limit`): `queue` (default) waits;
   * `drop_newest` refuses the task with a ConflictError naming the limit; `cancel_in_progress` cancels the key's
   * oldest task in flight (dead, `task.cancelled` in its stream): the newest wins. A running one's handler has its
   * `signal` aborted (a `CancelledError`): at once by a worker of this process, at its next heartbeat (a third of its
   * lease) by one of another; what it returns after is discarded.
   */
  concurrency?: TaskConcurrency;
  /**
   * The task's fairness group (a tenant, a user): waiting tasks of different groups take turns, one each, in the
   * queue and within a concurrency key, so a group with 10,000 waiting does not starve one with 10.
   */
  fairBy?: string;
  /** Attempts before the task is dead (default from config). */
  maxAttempts?: number;
  /** Only a worker that has this tag (`WorkOptions.tags`) claims the task. */
  tag?: string;
  /** A pause of kind `workflow` named this holds the task too, beside one of the workflow its tag names (`NewTask.pauseKey`). */
  pauseKey?: string;
  /**
   * A named rate limit (`engine.limits`) each attempt takes before its handler runs: no room, the task
   * waits in the queue for the limit's next slot without using up an attempt. Refused at the enqueue
   * when the limit does not exist.
   */
  rateLimit?: TaskRateOption;
}

const ON_LIMIT: readonly TaskOnLimit[] = ['queue', 'cancel_in_progress', 'drop_newest'];

/** The largest limit of running tasks, of a key or a queue. */
const LIMIT_MAX = 1_000_000;

function whole(value: unknown, path: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max)
    throw new ValidationError(path, `must be a whole number from 1 to ${max} (got ${JSON.stringify(value)})`);
  return value;
}

export interface EnqueueResult {
  task: Task;
  /** false when the idempotency key already existed. */
  created: boolean;
}

/**
 * An idle worker of this process, reserved to run one task as it is enqueued (`TaskQueue.reserve`):
 * the enqueue inserts the task with `claim`, and `settle` hands the task over (or frees the slot
 * when the enqueue did not claim it, failed or never happened). Settling again changes nothing.
 */
export interface Taker {
  claim: TaskClaim;
  settle(result?: EnqueueResult): void;
}

export interface QueueLimits {
  maxPayloadBytes: number;
  defaultMaxAttempts: number;
  maxBatch: number;
}

/**
 * The task queue: enqueue (one, many, or inside a caller's transaction), inspect, redrive, work.
 * Every state change of a task is an event in its stream `task:<id>`.
 *
 * @example
 * await queue.enqueue('email', { to: 'a@b.c' }, { idempotencyKey: 'welcome-42' });
 * const worker = queue.work('email', async (payload, { signal }) => send(payload, { signal }), { concurrency: 10 });
 */
export class TaskQueue {
  /** The workers of this process, by queue: an idle one takes a task enqueued here as it is inserted. */
  private readonly workers = new Map<string, Set<Worker>>();

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly limits: QueueLimits,
  ) {}

  /** The task protocol's claims, heartbeats and settlements for workers in other processes (`POST /queues/{name}/claim` …). */
  remote(options: RemoteOptions): RemoteWorkers {
    return new RemoteWorkers(this.store, this.journal, options);
  }

  /**
   * Sets `queue`'s limit of running tasks across every process (null: none). Stored, and read by
   * the queue's next claim, so it takes effect without a restart; lowering it stops nothing that runs.
   *
   * @example await engine.queue.setLimit('email', 5)
   */
  async setLimit(queue: string, concurrency: number | null): Promise<void> {
    checkQueueName(queue);
    if (concurrency !== null) whole(concurrency, 'concurrency', LIMIT_MAX);
    await this.store.queueLimitSet({ queue, concurrency });
  }

  /** `queue`'s limit of running tasks (`setLimit`), null when it has none. */
  async limit(queue: string): Promise<number | null> {
    checkQueueName(queue);
    return (await this.store.queueLimitList({ queue }))[0]?.concurrency ?? null;
  }

  /** Every queue that has a limit, by name. */
  listLimits(): Promise<QueueLimit[]> {
    return this.store.queueLimitList();
  }

  /**
   * Enqueues one task. In a caller's transaction, `taker` (see `reserve`) claims it as it is inserted
   * and gets it once the transaction commits: the caller knows what else the key holds.
   */
  async enqueue(
    queue: string,
    payload: unknown,
    options: EnqueueOptions & { tx?: Store; taker?: Taker } = {},
  ): Promise<EnqueueResult> {
    const { tx, taker, ...rest } = options;
    const [result] = await this.insert(queue, [{ payload, ...rest }], tx, '', taker);
    return result!;
  }

  /** Enqueues many tasks in one transaction (all or nothing); results are in input order. `path` names the list in errors (default `items`). */
  enqueueMany(
    queue: string,
    items: Array<EnqueueOptions & { payload: unknown }>,
    options: { tx?: Store; path?: string } = {},
  ): Promise<EnqueueResult[]> {
    const path = options.path ?? 'items';
    if (!Array.isArray(items) || items.length === 0) throw new ValidationError(path, 'must be a non-empty array');
    if (items.length > this.limits.maxBatch)
      throw new ValidationError(path, `has ${items.length} tasks, over the limit of ${this.limits.maxBatch}`);
    return this.insert(queue, items, options.tx, path);
  }

  get(id: string): Promise<Task> {
    return this.store.taskGet({ id });
  }

  list(options: { queue?: string; state?: TaskState; limit?: number; afterId?: string } = {}): Promise<Task[]> {
    return this.store.taskList({ ...options, limit: options.limit ?? 100 });
  }

  /** The dead-letter queue: tasks that used up their attempts or failed terminally, with their last error. */
  dead(options: { queue?: string; limit?: number; afterId?: string } = {}): Promise<Task[]> {
    return this.list({ ...options, state: 'dead' });
  }

  /** Every state change of the task, oldest first: its attempts, errors and outcome. */
  history(id: string): Promise<StoredEvent[]> {
    return this.journal.readStream(taskStream(id));
  }

  /** Puts a dead task back in its queue with fresh attempts. Redriving a task that is not dead changes nothing. */
  async redrive(id: string): Promise<{ task: Task; redriven: boolean }> {
    return this.store.transaction(async (tx) => {
      const result = await tx.taskRedrive({ id });
      if (result.redriven) await this.journal.appendMany([taskEvent('redrive', id, {})], { tx });
      return result;
    });
  }

  /** Starts a worker for `queue`. */
  work(queue: string, handler: TaskHandler, options: WorkOptions = {}): Worker {
    // a batched worker: its handler takes the tasks claimed together, as many at once as a batch holds
    const batched = options.batch && {
      handler: batchHandler(handler as BatchTaskHandler, options.batch),
      concurrency: options.concurrency ?? checkTaskBatch(options.batch, options.concurrency).maxSize,
    };
    if (batched) checkTaskBatch(options.batch, batched.concurrency);
    // a task's rate limit is taken before its handler (the worker's `rateGate`); what the call did is left to it after
    const rated = ratedHandler(this.store, batched?.handler ?? handler, options);
    const worker = new Worker(this.store, this.journal, queue, rated, {
      maxResultBytes: this.limits.maxPayloadBytes,
      ...options,
      ...(batched ? { concurrency: batched.concurrency } : {}),
    });
    if (batched) {
      const stop = worker.stop.bind(worker);
      worker.stop = () => {
        batched.handler.drain();
        return stop();
      };
    }
    worker.start();
    let workers = this.workers.get(queue);
    if (!workers) this.workers.set(queue, (workers = new Set()));
    workers.add(worker);
    return worker;
  }

  /**
   * An idle worker of this process for a task of `queue` with `tag`, its slot kept until the
   * `Taker` is settled: no claim statement, no wake-up between the enqueue and the handler.
   */
  reserve(queue: string, tag: string | null): Taker | null {
    for (const worker of this.workers.get(queue) ?? []) {
      const claim = worker.reserve(tag);
      if (!claim) continue;
      let settled = false;
      return {
        claim,
        settle: (result) => {
          if (settled) return;
          settled = true;
          if (result?.created) worker.adopt(result.task, claim);
          else worker.forgo();
        },
      };
    }
    return null;
  }

  /**
   * After an enqueue that may have cancelled a running task (`cancel_in_progress`): this process's workers of the queue
   * renew their leases now, so the one running it aborts its handler at once rather than at its next heartbeat.
   */
  private cancelled(queue: string, tasks: NewTask[]): void {
    if (tasks.some((t) => t.concurrency?.onLimit === 'cancel_in_progress'))
      for (const worker of this.workers.get(queue) ?? []) worker.renew();
  }

  /** The task `enqueue` would insert (checked, a new id), for a caller that inserts it with other writes (`GroupWrite.enqueue`); `claim`: see `reserve`. */
  newTask(queue: string, payload: unknown, options: EnqueueOptions & { claim?: TaskClaim } = {}): NewTask {
    const { claim, ...rest } = options;
    const [task] = this.checked(queue, [{ payload, ...rest }], '');
    return claim ? { ...task!, claim } : task!;
  }

  private checked(queue: string, items: Array<EnqueueOptions & { payload: unknown }>, path: string): NewTask[] {
    checkQueueName(queue);
    return items.map((item, i) => {
      const at = (field: string) => (path ? `${path}[${i}].${field}` : field);
      checkJson(at('payload'), item.payload ?? null, this.limits.maxPayloadBytes);
      const maxAttempts = item.maxAttempts ?? this.limits.defaultMaxAttempts;
      if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1000)
        throw new ValidationError(at('maxAttempts'), 'must be a whole number from 1 to 1000');
      const priority = item.priority ?? 0;
      if (!Number.isInteger(priority) || Math.abs(priority) > 1_000_000)
        throw new ValidationError(at('priority'), 'must be a whole number from -1000000 to 1000000');
      const concurrency = item.concurrency === undefined ? null : this.concurrency(item.concurrency, at);
      const runAt = item.runAt === undefined ? null : item.runAt instanceof Date ? item.runAt.getTime() : item.runAt;
      if (runAt !== null && !Number.isFinite(runAt))
        throw new ValidationError(at('runAt'), 'must be a valid date or ms timestamp');
      return {
        id: newId('task'),
        queue,
        payload: item.payload ?? null,
        idempotencyKey: item.idempotencyKey === undefined ? null : checkName(at('idempotencyKey'), item.idempotencyKey),
        orderingKey: item.orderingKey === undefined ? null : checkName(at('orderingKey'), item.orderingKey),
        runAt,
        priority,
        maxAttempts,
        tag: item.tag === undefined ? null : checkName(at('tag'), item.tag),
        ...(concurrency ? { concurrency } : {}),
        ...(item.fairBy === undefined ? {} : { fairBy: checkName(at('fairBy'), item.fairBy) }),
        ...(item.rateLimit === undefined ? {} : { rateLimit: taskRate(item.rateLimit, at) }),
        ...(item.pauseKey === undefined ? {} : { pauseKey: checkName(at('pauseKey'), item.pauseKey) }),
      };
    });
  }

  private concurrency(value: unknown, at: (field: string) => string): TaskConcurrency {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new ValidationError(at('concurrency'), 'must be an object { key, limit }');
    const c = value as Record<string, unknown>;
    if (c.onLimit !== undefined && !ON_LIMIT.includes(c.onLimit as TaskOnLimit))
      throw new ValidationError(at('concurrency.onLimit'), `must be one of ${ON_LIMIT.join(', ')}`);
    return {
      key: checkName(at('concurrency.key'), c.key),
      limit: whole(c.limit, at('concurrency.limit'), LIMIT_MAX),
      ...(c.onLimit === undefined ? {} : { onLimit: c.onLimit as TaskOnLimit }),
    };
  }

  private async insert(
    queue: string,
    items: Array<EnqueueOptions & { payload: unknown }>,
    tx: Store | undefined,
    path: string,
    given?: Taker,
  ): Promise<EnqueueResult[]> {
    const tasks = this.checked(queue, items, path);
    if (tasks.some((t) => t.rateLimit))
      await checkTaskRates(
        tx ?? this.store,
        tasks.map((t) => t.rateLimit),
        (i, field) => (path ? `${path}[${i}].${field}` : field),
      );
    if (tx) {
      let results: EnqueueResult[];
      try {
        results = await tx.taskEnqueue({ tasks: given ? [{ ...tasks[0]!, claim: given.claim }] : tasks });
      } catch (error) {
        given?.settle();
        throw error;
      }
      // the worker's slot waits for the transaction's end: its task once it committed, free again if it did not
      if (given) {
        tx.onCommit(() => given.settle(results[0]));
        tx.onRollback(() => given.settle());
      }
      tx.onCommit(() => this.cancelled(queue, tasks));
      return results;
    }
    // a key whose limit acts at the enqueue may refuse it: alone, never failing a batch of others' writes with it
    if (tasks.some((t) => t.concurrency?.onLimit && t.concurrency.onLimit !== 'queue')) {
      const results = await this.store.taskEnqueue({ tasks });
      this.cancelled(queue, tasks);
      return results;
    }
    // the task rows and their `task.enqueued` events, one statement on PostgreSQL; a task of an
    // ordering key waits for its turn, one with a run-at for its time: the claim decides
    const task = tasks[0]!;
    const taker =
      tasks.length === 1 && task.orderingKey === null && task.runAt === null && !task.concurrency
        ? this.reserve(queue, task.tag ?? null)
        : null;
    let results: EnqueueResult[] | undefined;
    try {
      results = await this.journal.group.statement((store) =>
        store.taskEnqueue({ tasks: taker ? [{ ...task, claim: taker.claim }] : tasks }),
      );
      return results;
    } finally {
      taker?.settle(results?.[0]);
    }
  }
}
