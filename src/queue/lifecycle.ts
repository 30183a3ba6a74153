import type { NewEvent, TaskState } from '../storage/store.js';

/**
 * The task state machine (drawn in docs/lifecycle.md). Every allowed transition and the journal
 * event it writes; the store enforces the `from` state in SQL, and this table is the one place
 * the events are named.
 */
export const taskTransitions = {
  enqueue: { from: null, to: 'ready', event: 'task.enqueued' },
  claim: { from: 'ready', to: 'running', event: 'task.claimed' },
  complete: { from: 'running', to: 'completed', event: 'task.completed' },
  retry: { from: 'running', to: 'ready', event: 'task.failed' },
  die: { from: 'running', to: 'dead', event: 'task.dead' },
  expire: { from: 'running', to: 'ready', event: 'task.lease_expired' },
  expireDead: { from: 'running', to: 'dead', event: 'task.dead' },
  redrive: { from: 'dead', to: 'ready', event: 'task.redriven' },
} as const satisfies Record<string, { from: TaskState | null; to: TaskState; event: string }>;

export type TaskTransition = keyof typeof taskTransitions;

/** The stream that holds one task's history. */
export function taskStream(id: string): string {
  return `task:${id}`;
}

/** The journal append for one transition of one task. */
export function taskEvent(transition: TaskTransition, id: string, data: Record<string, unknown>): { streamId: string; events: NewEvent[] } {
  return { streamId: taskStream(id), events: [{ type: taskTransitions[transition].event, data: { ...data, state: taskTransitions[transition].to } }] };
}

/** Whether the machine allows going from `from` to `to`. */
export function canTransition(from: TaskState | null, to: TaskState): boolean {
  return Object.values(taskTransitions).some((t) => t.from === from && t.to === to);
}
