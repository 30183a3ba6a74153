/** The task rows of the queue (`Store.taskEnqueue`, `taskClaim` and the rest). */
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
}

/** What a completion returns of each task it completed. */
export interface CompletedTask {
  id: string;
  queue: string;
  orderingKey: string | null;
}

/** A completion that names its task's queue and ordering key (`taskCompleteAll`). */
export type CompletionItem = Lease & { result: unknown; queue: string; orderingKey: string | null };

export interface Lease {
  id: string;
  leaseToken: string;
}

/** The queues of `tasks` that have an ordering key: a completion there makes the key's next task claimable, so they are woken. */
export function keyedQueues(tasks: Array<{ queue: string; orderingKey: string | null }>): Set<string> {
  return new Set(tasks.filter((t) => t.orderingKey !== null).map((t) => t.queue));
}
