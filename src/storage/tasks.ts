/** The task rows of the queue (`Store.taskEnqueue`, `taskClaim` and the rest). */
import type { NewEvent } from './store.js';
import { appendWakeups } from './wakeups.js';

export type TaskState = 'ready' | 'running' | 'completed' | 'dead';

export interface NewTask {
  id: string;
  queue: string;
  payload: unknown;
  idempotencyKey: string | null;
  orderingKey: string | null;
  /** absolute ms; null: now (database clock) */
  runAt: number | null;
  priority: number;
  maxAttempts: number;
  /** Only a worker that has this tag claims the task (see `taskClaim`); null or absent: any worker. */
  tag?: string | null;
  /** The worker that claims the task as it is inserted, if it can (`TaskClaim`). */
  claim?: TaskClaim;
  /**
   * At most `limit` tasks of `key` (in the queue) run at once; the others wait in arrival order. The tasks of
   * a key are meant to share one limit: the claim reads it from the key's oldest waiting task.
   */
  concurrency?: TaskConcurrency | null;
  /**
   * The task's fairness group (a tenant, a user): waiting tasks of different groups take turns in the claim, one
   * each, within the queue and within a concurrency key, so a group with 10,000 waiting does not starve one with 10.
   */
  fairBy?: string | null;
  /** A named rate limit the task takes before each attempt's handler runs (`TaskRate`). */
  rateLimit?: TaskRate | null;
  /**
   * A second name a workflow pause holds the task by, beside the workflow its tag names: a pause of kind `workflow`
   * named this holds it too (a stored workflow's id, for the passes of its executions). Null or absent: none.
   */
  pauseKey?: string | null;
}

/**
 * A task's rate limit: before its handler runs, the worker takes `units` of the limit `name`'s bucket `key`
 * ('' for the limit's one bucket); no room, the task waits for the next slot without using up an attempt.
 */
export interface TaskRate {
  name: string;
  units: number;
  key: string;
}

/**
 * A task's concurrency key and limit: the claim takes a task of `key` only while fewer than `limit`
 * of the key run, oldest first, across every process. An ordering key is `limit: 1`, in arrival order.
 *
 * @example { key: 'user:42', limit: 2 }
 */
export interface TaskConcurrency {
  key: string;
  limit: number;
  /**
   * What an enqueue does when the key is full (as many of its tasks waiting or running as the limit): `queue`
   * (default) waits its turn; `drop_newest` refuses it (`ConflictError`); `cancel_in_progress` cancels the key's
   * oldest task in flight (waiting or running, by arrival; dead, journaled `task.cancelled`), so its slot is the new
   * task's: the newest wins. A running one's lease ends with it: its worker's heartbeat finds it gone and aborts the
   * handler's signal, and what the handler returns after is discarded. Not stored: it acts at the enqueue only.
   */
  onLimit?: TaskOnLimit;
}

export type TaskOnLimit = 'queue' | 'cancel_in_progress' | 'drop_newest';

/**
 * Priority aging: a task is claimed by its run-at moved this much earlier per point of priority
 * (`sort_at` in the migrations, which hold the figure too). A task of priority 1 due now goes before
 * one of priority 0 due up to 10 s ago, not before one due longer ago: low priority waits, never starves.
 */
export const AGING_STEP_MS = 10_000;

/** A queue's limit of running tasks, across every process (`TaskStore.queueLimitSet`). */
export interface QueueLimit {
  queue: string;
  concurrency: number;
}

type Ordered = { run_at: number; priority: number; seq: number; fair_at?: number | null };

/** The order the claim takes ready tasks in (`sort_at`: the turn of a task with a fairness group or its run-at, aged; then arrival). */
export function claimOrder(a: Ordered, b: Ordered): number {
  return (
    Number(a.fair_at ?? a.run_at) -
      a.priority * AGING_STEP_MS -
      (Number(b.fair_at ?? b.run_at) - b.priority * AGING_STEP_MS) || a.seq - b.seq
  );
}

/**
 * Who claims a task as it is inserted (`Store.taskEnqueue`), as `taskClaim` would (its first
 * attempt): an idle worker of the process that enqueues takes it without a claim of its own. Not
 * a task whose queue or workflow is paused, nor one of an ordering key another task of which
 * waits or runs (or comes before it in the same enqueue): that one is ready as any other. Two
 * enqueues of one key at once must not both claim: the caller keeps them apart (a run's first
 * pass, by its new stream).
 */
export interface TaskClaim {
  workerId: string;
  leaseToken: string;
  leaseMs: number;
}

export interface Task {
  id: string;
  queue: string;
  state: TaskState;
  payload: unknown;
  idempotencyKey: string | null;
  orderingKey: string | null;
  runAt: number;
  priority: number;
  attempts: number;
  maxAttempts: number;
  leaseToken: string | null;
  leaseExpiresAt: number | null;
  workerId: string | null;
  lastError: string | null;
  result: unknown;
  createdAt: number;
  updatedAt: number;
  tag: string | null;
  /** When the current (or last) attempt was claimed, on the database clock; null before the first. */
  claimedAt: number | null;
  /** Only on a task that has one (`NewTask.concurrency`). */
  concurrency?: TaskConcurrency;
  /** Only on a task that has one (`NewTask.fairBy`). */
  fairBy?: string;
  /** Only on a task that has one (`NewTask.rateLimit`). */
  rateLimit?: TaskRate;
}

/** What a completion returns of each task it completed. */
export interface CompletedTask {
  id: string;
  queue: string;
  orderingKey: string | null;
  /**
   * Another task of its ordering key is ready (the key's next, claimable now that this one is done), or
   * of its concurrency key, or of its queue when the queue has a limit (the slot it freed).
   */
  next: boolean;
}

/** A task to complete with its result (`taskCompleteAll`). */
export type CompletionItem = Lease & { result: unknown };

export interface Lease {
  id: string;
  leaseToken: string;
}

/**
 * The queues where a completion made a task claimable, so their workers are woken: a task of the
 * same ordering key was waiting for it. A run's pass that ends its run wakes nobody.
 */
export function unblockedQueues(done: CompletedTask[]): Set<string> {
  return new Set(done.filter((t) => t.next).map((t) => t.queue));
}

/**
 * A task as its insert stored it, built without reading it back: `payload` is the JSON the insert
 * was given (parsed again, so the caller's object is not shared), `state` the one the insert chose
 * (running: claimed by `t.claim` as it went in), `now` and `runAt` on the database clock.
 */
export function insertedTask(
  t: NewTask,
  payload: string,
  row: { state: 'ready' | 'running'; now: number; runAt: number; leaseExpiresAt: number | null },
): Task {
  const claim = row.state === 'running' ? t.claim : undefined;
  return {
    id: t.id,
    queue: t.queue,
    state: row.state,
    payload: JSON.parse(payload),
    idempotencyKey: t.idempotencyKey,
    orderingKey: t.orderingKey,
    runAt: row.runAt,
    priority: t.priority,
    attempts: claim ? 1 : 0,
    maxAttempts: t.maxAttempts,
    leaseToken: claim ? claim.leaseToken : null,
    leaseExpiresAt: claim ? row.leaseExpiresAt : null,
    workerId: claim ? claim.workerId : null,
    lastError: null,
    result: null,
    createdAt: row.now,
    updatedAt: row.now,
    tag: t.tag ?? null,
    claimedAt: claim ? row.now : null,
    ...(t.concurrency ? { concurrency: { key: t.concurrency.key, limit: t.concurrency.limit } } : {}),
    ...(t.fairBy ? { fairBy: t.fairBy } : {}),
    ...(t.rateLimit ? { rateLimit: t.rateLimit } : {}),
  };
}

/** The prefix of the streams that hold the tasks' histories. */
const TASK_STREAM = 'task:';

/** The stream that holds one task's history. */
export function taskStream(id: string): string {
  return `${TASK_STREAM}${id}`;
}

/**
 * Whether `streamId` is a task's stream, which has no `streams` row: its version is its newest
 * event's. Every writer of a task's stream holds the task's row (the transition's `UPDATE`, or its
 * insert), so the next version is the newest + 1; another append to it at the same moment fails
 * on the `(stream_id, version)` key instead of waiting.
 */
export function isTaskStream(streamId: string): boolean {
  return streamId.startsWith(TASK_STREAM);
}

/** The event an enqueue writes for each task it creates, in the task's stream (in SQL on PostgreSQL: see `taskEnqueue` there). */
export const TASK_ENQUEUED = 'task.enqueued';

/** `TASK_ENQUEUED`'s event for `task` as it was stored (its run-at on the database clock). */
export function enqueuedEvent(task: Task): NewEvent {
  return {
    type: TASK_ENQUEUED,
    data: {
      queue: task.queue,
      orderingKey: task.orderingKey,
      runAt: task.runAt,
      priority: task.priority,
      maxAttempts: task.maxAttempts,
      state: 'ready',
      ...(task.concurrency ? { concurrency: task.concurrency } : {}),
      ...(task.fairBy ? { fairBy: task.fairBy } : {}),
    },
  };
}

/** The event a completion writes for each task it completes, in the task's stream (in SQL on PostgreSQL: `rl_task_complete`, migration 160). */
export const TASK_COMPLETED = 'task.completed';

/** `TASK_COMPLETED`'s event for a task as its completion found it: the attempt, who ran it, since when. */
export function completedEvent(task: {
  attempts: number;
  workerId: string | null;
  claimedAt: number | null;
}): NewEvent {
  return {
    type: TASK_COMPLETED,
    data: { attempt: task.attempts, workerId: task.workerId, claimedAt: task.claimedAt, state: 'completed' },
  };
}

/** The wake-ups of the events an enqueue or a completion wrote: the streams of its tasks, as an append names them. */
export function taskWakeups(ids: string[]): string[] {
  const appends = ids.map((id) => ({ streamId: taskStream(id), events: [] }));
  return appends.length === 0 ? [] : appendWakeups({ appends }, { events: [], duplicate: false });
}

/** The wake-ups of an enqueue's events: the streams of the tasks it created. */
export function enqueuedWakeups(results: Array<{ task: Task; created: boolean }>): string[] {
  return taskWakeups(results.filter((r) => r.created).map((r) => r.task.id));
}

/** The reason an enqueue over a full key is refused (`drop_newest`): the key, what it holds, its limit. */
export function limitFull(c: TaskConcurrency, n: number): string {
  return `concurrency ${c.key} — ${n} of ${c.limit} in use`;
}

/** The event a task cancelled by a newer one of its key (`cancel_in_progress`) has in its stream. */
export const TASK_CANCELLED = 'task.cancelled';

/**
 * `TASK_CANCELLED`'s event: the newer task (`by`) and the reason; a task cancelled while it ran ends its attempt with
 * it, so the event says which attempt, its worker and since when, as every event that ends an attempt does.
 *
 * @example cancelledEvent('task_2', cancelledReason('task_2', 'chat:1'), { attempt: 1, workerId: 'w1', claimedAt: 0 })
 */
export function cancelledEvent(
  by: string,
  reason: string,
  attempt?: { attempt: number; workerId: string | null; claimedAt: number | null },
): NewEvent {
  return { type: TASK_CANCELLED, data: { by, reason, ...attempt, state: 'dead' } };
}

/**
 * The reason a task cancelled by a newer one of its key (`cancel_in_progress`) is dead, its `lastError`.
 *
 * @example cancelledReason('task_2', 'chat:1') // 'cancelled: task task_2 of concurrency chat:1 is newer (…)'
 */
export function cancelledReason(by: string, key: string): string {
  return `cancelled: task ${by} of concurrency ${key} is newer (cancel_in_progress)`;
}

/**
 * A task's turn in its fairness group (`NewTask.fairBy`): 1 ms after the group's last waiting turn (`last`), and never
 * before the round after the queue's first waiting turn (`front` + 1; its run-at when that is not later): a group with
 * nothing waiting joins the next round, one with a backlog goes behind its own. Start-time fair queuing, one task a
 * turn; joining the next round, not the current one, a stream of new groups cannot hold back a group's next turn.
 */
export function fairTurn(last: number | null, front: number | null, runAt: number): number {
  const start = front === null || front >= runAt ? runAt : front + 1;
  return last === null ? start : Math.max(last + 1, start);
}
