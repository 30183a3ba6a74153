import { backoffDelay, type Backoff } from '../backoff.js';
import { crashPoint } from '../crash.js';
import { describeError, LeaseLostError, storeUnavailable, TerminalError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { EngineEvents } from '../observe/events.js';
import type { Lease, Store, Task } from '../storage/store.js';
import { taskEvent } from './lifecycle.js';

/*
 * How an attempt ends, for every claimer of a queue: the in-process Worker (`settleAttempt`) and
 * a remote worker over HTTP (`remote.ts`) journal the same events, with the same backoff and dead
 * letters, so a task's history does not say which kind ran it.
 */

export type Outcome = 'completed' | 'failed' | 'dead' | 'lost';

/** How a failed attempt goes on: dead (and why), or ready again after `retryDelayMs`. */
export interface Failure {
  message: string;
  /** Why the task is dead; null: it is tried again. */
  dies: 'terminal error' | 'attempts used up' | null;
  retryDelayMs: number;
  /** The database cut the attempt short, not the task: back in its place (see `Store.taskFail`). */
  keepPlace?: boolean;
}

/**
 * The retry policy for an attempt that threw `error`: a TerminalError or the last attempt dies;
 * the database being away is not the task's fault (no backoff, back in its place); else backoff
 * with jitter, or `retryAfterMs` when the worker named one.
 */
export function failureOf(
  task: Task,
  error: { message: string; terminal: boolean; outage?: boolean; retryAfterMs?: number },
  backoff: Backoff,
): Failure {
  const dies = error.terminal ? 'terminal error' : task.attempts >= task.maxAttempts ? 'attempts used up' : null;
  // Before, at now + 100 ms: with ~500 runs queued at a PostgreSQL restart, its runs waited 21.6-26 s behind tasks due since.
  const outage = dies === null && error.outage === true;
  const retryDelayMs = dies !== null || outage ? 0 : (error.retryAfterMs ?? backoffDelay(task.attempts, backoff));
  return { message: error.message, dies, retryDelayMs, ...(outage ? { keepPlace: true } : {}) };
}

/** `failureOf` for an error a handler threw. */
function failureOfError(task: Task, error: unknown, message: string, backoff: Backoff): Failure {
  return failureOf(
    task,
    { message, terminal: error instanceof TerminalError, outage: storeUnavailable(error) !== null },
    backoff,
  );
}

/**
 * Completes the task in the journal's group commit (the store journals `task.completed` with the
 * row): false when its lease was lost, and then nothing was written.
 */
export async function completeAttempt(journal: Journal, lease: Lease, result: unknown): Promise<boolean> {
  try {
    await journal.group.submit({
      completes: [{ ...lease, result }],
      also: async () => crashPoint('task:beforeComplete'),
    });
    crashPoint('task:afterComplete');
    return true;
  } catch (error) {
    if (error instanceof LeaseLostError) return false;
    throw error;
  }
}

/**
 * Fails the attempt `task` (as claimed, with its lease token) ran on `workerId`: `task.failed`
 * with its retry time, or `task.dead`, in one transaction with the row; the `task:retry` or
 * `task:dead` observe event after. `lost`, and nothing written, when the lease was not held.
 */
export async function failAttempt(
  store: Store,
  journal: Journal,
  task: Task,
  workerId: string,
  failure: Failure,
  events?: EngineEvents,
): Promise<{ outcome: Exclude<Outcome, 'completed'>; task?: Task }> {
  const attempt = { attempt: task.attempts, workerId, claimedAt: task.claimedAt, error: failure.message };
  try {
    const failed = await store.transaction(async (tx) => {
      const failed = await tx.taskFail({
        id: task.id,
        leaseToken: task.leaseToken!,
        error: failure.message,
        retryDelayMs: failure.dies ? null : failure.retryDelayMs,
        keepPlace: failure.keepPlace ?? false,
      });
      const event = failure.dies
        ? taskEvent('die', task.id, { ...attempt, reason: failure.dies })
        : taskEvent('retry', task.id, { ...attempt, retryAt: failed.runAt });
      await journal.appendMany([event], { tx, unread: true });
      return failed;
    });
    const base = { queue: task.queue, taskId: task.id, attempt: task.attempts, error: failure.message };
    if (failure.dies) events?.emit('task:dead', base);
    else events?.emit('task:retry', { ...base, retryAt: failed.runAt });
    return { outcome: failure.dies ? 'dead' : 'failed', task: failed };
  } catch (error) {
    if (error instanceof LeaseLostError) return { outcome: 'lost' };
    throw error;
  }
}

/**
 * Commits the outcome of an attempt an in-process worker ran (its handler's `result`, or the
 * `error` it threw). While the database is unreachable (restart, dropped connection) it is tried
 * again, 100 ms to 1 s apart, for up to a lease or until the worker stops (`active`): the lease is
 * still the worker's (its heartbeat goes on), so the task moves on as soon as the database is back
 * instead of when the lease runs out. Measured before: a PostgreSQL restart left every task being
 * settled at that moment held for the whole 30 s lease.
 */
export async function settleAttempt(
  store: Store,
  journal: Journal,
  task: Task,
  workerId: string,
  attempt: { result: unknown } | { error: unknown },
  o: {
    backoff: Backoff;
    leaseMs: number;
    active: () => boolean;
    events?: EngineEvents;
    onError?: (error: unknown) => void;
  },
): Promise<Outcome> {
  const started = Date.now();
  for (let pause = 100; ; pause = Math.min(pause * 2, 1000)) {
    try {
      if ('error' in attempt)
        return (
          await failAttempt(
            store,
            journal,
            task,
            workerId,
            failureOfError(task, attempt.error, describeError(attempt.error), o.backoff),
            o.events,
          )
        ).outcome;
      return (await completeAttempt(journal, { id: task.id, leaseToken: task.leaseToken! }, attempt.result))
        ? 'completed'
        : 'lost';
    } catch (error) {
      o.onError?.(error);
      // stopping: not for a whole lease; once this process is gone, liveness ends its leases in seconds
      if (!storeUnavailable(error) || !o.active() || Date.now() - started + pause > o.leaseMs) return 'lost';
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** Ends the leases of crashed, stalled or vanished workers (of any queue, by time): their tasks are ready again, or dead. */
export async function expireLeases(store: Store, journal: Journal, events?: EngineEvents): Promise<Task[]> {
  const expired = await store.transaction(async (tx) => {
    const expired = await tx.taskExpire({ limit: 1000 });
    if (expired.length === 0) return expired;
    const appends = expired.map((t) =>
      taskEvent(t.state === 'dead' ? 'expireDead' : 'expire', t.id, {
        attempt: t.attempts,
        workerId: t.workerId,
        claimedAt: t.claimedAt,
        error: t.lastError,
      }),
    );
    await journal.appendMany(appends, { tx, unread: true });
    return expired;
  });
  for (const t of expired)
    if (t.state === 'dead')
      events?.emit('task:dead', {
        queue: t.queue,
        taskId: t.id,
        attempt: t.attempts,
        error: t.lastError ?? 'lease expired',
      });
  return expired;
}
