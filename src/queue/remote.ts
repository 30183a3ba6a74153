import { defaultBackoff, type Backoff } from '../backoff.js';
import { LeaseLostError, NotFoundError, RetryAfterError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import { Wakeup } from '../journal/wakeup.js';
import { checkJson } from '../json.js';
import type { EngineEvents } from '../observe/events.js';
import type { Store, Task } from '../storage/store.js';
import { rateDeferral } from '../storage/rate-after.js';
import { checkQueueName } from './lifecycle.js';
import { completeAttempt, expireLeases, failAttempt, failureOf } from './settle.js';
import { rateGate } from './task-rate.js';

export interface RemoteOptions {
  /** The lease of a claim that names none. */
  leaseMs: number;
  /** The fallback poll of a waiting claim when no wake-up arrives. */
  pollMs: number;
  maxResultBytes: number;
  backoff?: Backoff;
  events?: EngineEvents;
}

export interface RemoteClaim {
  queue: string;
  /** The remote worker's name; its leases are held as `remote:<worker>`. */
  worker: string;
  max: number;
  /** How long to wait for a task when none is ready (ms); 0: answer at once. */
  waitMs: number;
  leaseMs?: number;
  /** The client went away: stop waiting, and give back what was claimed for it. */
  signal?: AbortSignal;
}

/** A lease held by a remote worker: the token it got with its claim. */
export interface RemoteLease {
  id: string;
  leaseToken: string;
}

/** Prefixes a remote worker's name: no name it chooses can look like a process's lease holder (see Liveness). */
export const REMOTE_WORKER_PREFIX = 'remote:';

/**
 * Claimers of a queue that live in another process and speak to this one (the HTTP task
 * protocol): no new semantics. A claim is `taskClaim` with a fresh lease token, the attempt ends
 * through `settle.ts` as an in-process worker's does, and a token that no longer holds the task's
 * lease (expired and claimed again, completed, cancelled, unknown) is a `LeaseLostError` with nothing
 * written. A remote worker has no process row: its lease ends by time, through the same expiry
 * sweep, which claims here run too (at most once per poll), so a vanished worker's task is
 * claimable again once its lease runs out even where no in-process worker sweeps.
 *
 * @example
 * const remote = new RemoteWorkers(store, engine.journal, { leaseMs: 30_000, pollMs: 1000, maxResultBytes: 1 << 20 });
 * const [task] = await remote.claim({ queue: 'email', worker: 'py-1', max: 1, waitMs: 10_000 });
 * await remote.complete({ id: task.id, leaseToken: task.leaseToken! }, { sent: true });
 */
export class RemoteWorkers {
  private sweeping: Promise<unknown> | null = null;
  private sweptAt = Number.NEGATIVE_INFINITY;
  /**
   * The tasks this process handed out, as claimed, until settled or their lease is long gone: a
   * completion answers the task without reading it back. Measured, 20,000 tasks completed through
   * RemoteWorkers on PostgreSQL, 8 claimers of 100: 5,700/s reading each task back after its
   * completion. A settle of a task claimed through another server reads it.
   */
  private readonly claimed = new Map<string, { task: Task; until: number }>();

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly options: RemoteOptions,
  ) {}

  /** Up to `max` ready tasks of `queue`, each leased to `worker`; waits up to `waitMs` for one, woken by the queue's notifications. */
  async claim(c: RemoteClaim): Promise<Task[]> {
    checkQueueName(c.queue);
    if (c.waitMs <= 0) return this.claimOnce(c);
    const wakeup = new Wakeup();
    // listening before the first claim: a task enqueued between that claim and the wait still wakes it
    const unlisten = await this.store.listen('tasks', (queue) => {
      if (queue === '' || queue === c.queue) wakeup.wake();
    });
    const gone = () => wakeup.wake();
    c.signal?.addEventListener('abort', gone);
    try {
      const deadline = performance.now() + c.waitMs;
      for (;;) {
        const tasks = await this.claimOnce(c);
        if (tasks.length > 0 || c.signal?.aborted) return tasks;
        const left = deadline - performance.now();
        if (left <= 0) return tasks;
        const dueIn = await this.store.taskDueIn({ queue: c.queue });
        await wakeup.wait(
          Math.min(left, this.options.pollMs, dueIn === null ? Number.POSITIVE_INFINITY : Math.max(1, dueIn)),
        );
      }
    } finally {
      c.signal?.removeEventListener('abort', gone);
      await unlisten();
    }
  }

  /** Extends the lease by `leaseMs` (default: the claim's default) from now; the task as it is now. */
  async heartbeat(lease: RemoteLease, leaseMs = this.options.leaseMs): Promise<Task> {
    const renewed = await this.store.taskHeartbeat({ leases: [lease], leaseMs });
    if (renewed.length === 0) await this.lost(lease);
    const entry = this.claimed.get(lease.id);
    if (entry) entry.until = performance.now() + leaseMs;
    return this.store.taskGet({ id: lease.id });
  }

  /** Completes the task with `result`, journaled as an in-process completion is (`task.completed`). */
  async complete(lease: RemoteLease, result: unknown): Promise<Task> {
    checkJson('result', result ?? null, this.options.maxResultBytes);
    if (!(await completeAttempt(this.journal, { id: lease.id, leaseToken: lease.leaseToken }, result ?? null)))
      await this.lost(lease);
    const held = this.held(lease);
    this.claimed.delete(lease.id);
    const now = Date.now();
    // as the row now is, but for updated_at: this process's clock, not the database's
    const task = held
      ? {
          ...held,
          state: 'completed' as const,
          result: result ?? null,
          leaseToken: null,
          leaseExpiresAt: null,
          updatedAt: now,
        }
      : await this.store.taskGet({ id: lease.id });
    this.options.events?.emit('task:complete', {
      queue: task.queue,
      taskId: task.id,
      attempt: task.attempts,
      durationMs: Math.max(0, task.updatedAt - (task.claimedAt ?? task.updatedAt)),
    });
    return task;
  }

  /**
   * Completes many tasks in one go (their writes share the journal's group commit), each fenced on
   * its own: a lost or unknown one is answered as its error and writes nothing, the others complete.
   */
  async completeMany(
    items: Array<RemoteLease & { result?: unknown }>,
    path = 'completions',
  ): Promise<Array<{ task: Task } | { error: LeaseLostError | NotFoundError }>> {
    for (const [i, item] of items.entries())
      checkJson(`${path}[${i}].result`, item.result ?? null, this.options.maxResultBytes);
    return Promise.all(
      items.map((item) =>
        this.complete(item, item.result).then(
          (task) => ({ task }),
          (error: unknown) => {
            if (error instanceof LeaseLostError || error instanceof NotFoundError) return { error };
            throw error;
          },
        ),
      ),
    );
  }

  /**
   * Fails the attempt: ready again after the queue's backoff (or `retryAfterMs`), or dead when not
   * `retryable` or its attempts are used up, journaled as an in-process failure is.
   */
  async fail(lease: RemoteLease, failure: { error: string; retryable: boolean; retryAfterMs?: number }): Promise<Task> {
    if (typeof failure.error !== 'string' || failure.error.length > 10_000)
      throw new ValidationError('error', 'must be a string of at most 10,000 characters');
    const task = this.held(lease) ?? (await this.store.taskGet({ id: lease.id }));
    if (task.state !== 'running' || task.leaseToken !== lease.leaseToken) return this.lost(lease);
    this.claimed.delete(lease.id);
    const policy = failureOf(
      task,
      {
        message: failure.error,
        terminal: !failure.retryable,
        ...(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs }),
      },
      this.options.backoff ?? defaultBackoff,
    );
    const { outcome, task: failed } = await failAttempt(
      this.store,
      this.journal,
      task,
      task.workerId ?? '',
      policy,
      this.options.events,
    );
    if (outcome === 'lost' || !failed) return this.lost(lease);
    // a 429 a remote worker met pushes its limit's next slot, as one met here does (task-rate.ts)
    if (failure.retryAfterMs !== undefined && task.rateLimit) {
      const push = new RetryAfterError(failure.error, failure.retryAfterMs);
      await rateDeferral(push, [task.rateLimit], await this.store.now())?.(this.store);
    }
    return failed;
  }

  private async claimOnce(c: RemoteClaim): Promise<Task[]> {
    await this.sweep();
    const workerId = `${REMOTE_WORKER_PREFIX}${c.worker}`;
    const { value: claimed } = await this.journal.group.submit({
      statement: (store) =>
        store.taskClaim({
          queue: c.queue,
          limit: c.max,
          leaseMs: c.leaseMs ?? this.options.leaseMs,
          workerId,
          leaseToken: newId('lease'),
        }),
    });
    // a task whose rate limit has no room goes back to the queue till the limit's next slot, not to the worker
    const given = claimed.some((t) => t.rateLimit)
      ? await Promise.all(claimed.map((t) => rateGate(this.store, t)))
      : [];
    const tasks = claimed.filter((_, i) => !given[i]);
    if (c.signal?.aborted && tasks.length > 0) {
      // nobody will read the answer: ready again at once, the attempt not counted, rather than held for a whole lease
      await this.store.taskRelease({ leases: tasks.map((t) => ({ id: t.id, leaseToken: t.leaseToken! })) });
      return [];
    }
    const until = performance.now() + (c.leaseMs ?? this.options.leaseMs);
    for (const task of tasks) this.claimed.set(task.id, { task, until });
    const events = this.options.events;
    if (events?.has('task:claim'))
      for (const t of tasks) events.emit('task:claim', { queue: c.queue, taskId: t.id, attempt: t.attempts, workerId });
    return tasks;
  }

  /** Expires leases whose time ran out, at most once per poll interval of this process (claims at once share one sweep). */
  private async sweep(): Promise<void> {
    if (this.sweeping) return void (await this.sweeping);
    if (performance.now() - this.sweptAt < this.options.pollMs) return;
    this.sweptAt = performance.now();
    // a lease not settled here: its worker vanished, or settles through another server
    for (const [id, entry] of this.claimed) if (entry.until < this.sweptAt) this.claimed.delete(id);
    this.sweeping = expireLeases(this.store, this.journal, this.options.events).finally(() => (this.sweeping = null));
    await this.sweeping;
  }

  /** The task as claimed here with this lease, if it was. */
  private held(lease: RemoteLease): Task | undefined {
    const entry = this.claimed.get(lease.id);
    return entry?.task.leaseToken === lease.leaseToken ? entry.task : undefined;
  }

  /** 404 when the task does not exist, else 409: the token does not hold its lease. */
  private async lost(lease: RemoteLease): Promise<never> {
    await this.store.taskGet({ id: lease.id });
    throw new LeaseLostError(
      `task ${lease.id}: lease_token does not hold its lease (expired and claimed again, settled, or cancelled)`,
    );
  }
}
