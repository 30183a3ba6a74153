import type { QueueStats, TaskDeleteParams } from './maintenance.js';
import type { CompletedTask, CompletionItem, Lease, NewTask, QueueLimit, Task, TaskState } from './tasks.js';

/** The queue's table: tasks enqueued, claimed under a lease, completed, failed, redriven and deleted. */
export interface TaskStore {
  /**
   * Inserts tasks and journals each one it creates (`enqueuedEvent`, in its stream `taskStream(id)`):
   * one statement on PostgreSQL. A task whose (queue, idempotency key) exists returns the stored
   * one, `created: false`, and writes nothing. A task with a `claim` is claimed as it is inserted
   * (`TaskClaim`), unless paused. A task of a full concurrency key whose `onLimit` acts at the enqueue refuses the
   * enqueue (`drop_newest`: ConflictError, nothing written) or cancels the key's oldest task in flight, waiting or
   * running (`cancel_in_progress`: dead, its lease gone), counted under the queue's claim lock; a task with a fairness
   * group gets its turn (`fairTurn`).
   */
  taskEnqueue(p: { tasks: NewTask[] }): Promise<Array<{ task: Task; created: boolean }>>;
  /**
   * Claims up to `limit` ready tasks of `queue` whose run-at has come, highest priority first,
   * then oldest. A task with an ordering key is claimable only when no task of that key is running
   * and none older is waiting. Each claimed task gets `leaseToken` and a lease of `leaseMs`.
   * With `tags`, a task with a tag is claimed only when `tags` holds it (a task without one
   * always is). Nothing of a paused queue is claimed, nor a task whose tag names a paused workflow.
   * Of a concurrency key (`NewTask.concurrency`), only its oldest due tasks are claimable, as many as
   * its free slots (the limit of its oldest waiting task less the tasks of the key running); a queue
   * with a limit (`queueLimitSet`) gets no more than its free slots. "First" is by run-at (a task of a
   * fairness group: its turn) moved `AGING_STEP_MS` earlier per point of priority (aging), then arrival.
   */
  taskClaim(p: {
    queue: string;
    limit: number;
    leaseMs: number;
    workerId: string;
    leaseToken: string;
    tags?: string[];
  }): Promise<Task[]>;
  /** Extends the leases still held; returns the ids whose lease was extended. */
  taskHeartbeat(p: { leases: Lease[]; leaseMs: number }): Promise<string[]>;
  /**
   * Checks that every one of `leases` is held (its task running with its token) and keeps them so
   * until the transaction ends, or fails with `LeaseLostError` (some lease is no longer held, or two
   * name one task), which also fails the transaction it is in. It writes nothing: heartbeats extend
   * leases, a write only needs them held. In a transaction, PostgreSQL sends it with the
   * transaction's next statement, so that statement reports the failure: the check of a batch that
   * has one to write costs no round trip of its own.
   */
  taskHold(p: { leases: Lease[] }): Promise<void>;
  /** Completes the tasks whose lease is still held, each with its `task.completed` (`completedEvent`) in its stream; returns those (the others were lost). */
  taskComplete(p: { items: Array<Lease & { result: unknown }> }): Promise<CompletedTask[]>;
  /**
   * Completes every one of `items`' tasks or fails with `LeaseLostError` (a task no longer held
   * with its token, or two items naming one task), as `taskHold` does, and like it travels with
   * the transaction's next statement on PostgreSQL. Journals each completion as `taskComplete`.
   */
  taskCompleteAll(p: { items: CompletionItem[] }): Promise<void>;
  /**
   * Gives back claimed tasks whose attempt never started (a worker's prefetched tasks when it
   * stops or holds them too long): ready again, the claim's attempt not counted. Returns the ids
   * released; a lease no longer held releases nothing. With `runAt`, not before then (a task whose rate limit had
   * no room waits for its next slot).
   */
  taskRelease(p: { leases: Lease[]; runAt?: number }): Promise<string[]>;
  /**
   * Fails an attempt: back to ready after `retryDelayMs`, or dead when it is null. Throws `LeaseLostError`.
   * `keepPlace`: the database cut the attempt short, not the task: ready again at its own run-at, ahead of tasks due after it.
   */
  taskFail(p: Lease & { error: string; retryDelayMs: number | null; keepPlace?: boolean }): Promise<Task>;
  /** Ends expired leases: the task is ready again, or dead when its attempts are used up. */
  taskExpire(p: { limit: number }): Promise<Task[]>;
  taskGet(p: { id: string }): Promise<Task>;
  taskList(p: { queue?: string; state?: TaskState; limit: number; afterId?: string }): Promise<Task[]>;
  /** Dead → ready with fresh attempts. Any other state is returned unchanged (`redriven: false`). */
  taskRedrive(p: { id: string }): Promise<{ task: Task; redriven: boolean }>;
  /**
   * Moves the waiting (ready) tasks of an ordering key earlier, to `runAt` at the latest, and
   * returns how many there were: 0 means the caller should enqueue one. Lets a run that sleeps
   * until tomorrow be woken now by a signal, without a second task queuing behind the first.
   * Inside a transaction it serializes with other reschedules of the key until the commit, so two
   * callers never both see 0 and both enqueue.
   */
  taskReschedule(p: { queue: string; orderingKey: string; runAt: number }): Promise<number>;
  /**
   * Milliseconds from now (the database's clock) until the earliest ready task of `queue` that
   * `tags` may claim (see `taskClaim`) and that is not due yet becomes due; null when none. An idle
   * worker sleeps that long (one statement: the clock is read in it). A task due already that a
   * claim did not take waits behind its ordering key: only news makes it claimable (the
   * completion or failure before it, which wakes the workers), so it does not count; counted, it
   * made every idle worker claim again every millisecond while the task before it ran. Except one
   * that became due within the last `lookbackMs` (then at most 0 comes back): the claim that came
   * back short, sent that long ago, may have found it not due yet.
   */
  taskDueIn(p: { queue: string; tags?: string[]; lookbackMs?: number }): Promise<number | null>;
  /** Unfinished work per queue, in one query (metrics scrape it; doctor reads it). */
  taskStats(): Promise<QueueStats[]>;
  /** Of `orderingKeys`, the ones that have a ready or running task in `queue`. */
  taskListActiveKeys(p: { queue: string; orderingKeys: string[] }): Promise<string[]>;
  /**
   * Sets a queue's limit of running tasks across every process (null: no limit), read by the queue's
   * next claim: no restart. Lowering it below what runs stops nothing; the queue claims again once
   * enough have ended.
   */
  queueLimitSet(p: { queue: string; concurrency: number | null }): Promise<void>;
  /** The queues' limits, by queue name (one with `queue`). */
  queueLimitList(p?: { queue?: string }): Promise<QueueLimit[]>;
  /** Deletes up to `limit` finished tasks (oldest change first) and returns their ids. Never a ready or running one. */
  taskDelete(p: TaskDeleteParams): Promise<string[]>;
}
