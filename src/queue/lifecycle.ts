import { ValidationError } from '../errors.js';
import type { NewEvent, TaskState } from '../storage/store.js';
import { TASK_CANCELLED, TASK_COMPLETED, TASK_ENQUEUED, taskStream } from '../storage/tasks.js';

export { taskStream };

const QUEUE_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/** A ValidationError naming `queue` unless it is a queue's name. */
export function checkQueueName(queue: unknown): string {
  if (typeof queue !== 'string' || !QUEUE_NAME.test(queue))
    throw new ValidationError('queue', 'must be 1–128 characters of A–Z a–z 0–9 _ . : -');
  return queue;
}

/**
 * The task state machine (drawn in docs/lifecycle.md). Every allowed transition and the journal
 * event it writes; the store enforces the `from` state in SQL, and this table is the one place
 * the events are named. A claim and a release write no event: the event that ends an attempt
 * carries its worker and its start (`workerId`, `startedAt`), so a task's history shows every
 * attempt with one event instead of two, and a claim costs no append.
 */
export const taskTransitions = {
  // these two are written by the store with the task rows (`Store.taskEnqueue`, `taskComplete`)
  enqueue: { from: null, to: 'ready', event: TASK_ENQUEUED },
  complete: { from: 'running', to: 'completed', event: TASK_COMPLETED },
  claim: { from: 'ready', to: 'running', event: null },
  release: { from: 'running', to: 'ready', event: null },
  retry: { from: 'running', to: 'ready', event: 'task.failed' },
  die: { from: 'running', to: 'dead', event: 'task.dead' },
  expire: { from: 'running', to: 'ready', event: 'task.lease_expired' },
  expireDead: { from: 'running', to: 'dead', event: 'task.dead' },
  redrive: { from: 'dead', to: 'ready', event: 'task.redriven' },
  // written by the store with the newer task of its key (`TaskConcurrency.onLimit: 'cancel_in_progress'`); a running
  // one's lease ends with it, and its worker's heartbeat aborts the handler
  cancel: { from: 'ready', to: 'dead', event: TASK_CANCELLED },
  cancelRunning: { from: 'running', to: 'dead', event: TASK_CANCELLED },
} as const satisfies Record<string, { from: TaskState | null; to: TaskState; event: string | null }>;

export type TaskTransition = keyof typeof taskTransitions;
/** The transitions the journal records. */
export type JournaledTransition = {
  [K in TaskTransition]: (typeof taskTransitions)[K]['event'] extends string ? K : never;
}[TaskTransition];

/** The journal append for one transition of one task. */
export function taskEvent(
  transition: JournaledTransition,
  id: string,
  data: Record<string, unknown>,
): { streamId: string; events: NewEvent[] } {
  const t = taskTransitions[transition];
  return { streamId: taskStream(id), events: [{ type: t.event, data: { ...data, state: t.to } }] };
}

/** Whether the machine allows going from `from` to `to`. */
export function canTransition(from: TaskState | null, to: TaskState): boolean {
  return Object.values(taskTransitions).some((t) => t.from === from && t.to === to);
}
