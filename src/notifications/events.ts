import { RUN_EVENT } from '../runtime/events.js';
import type { StoredEvent } from '../storage/store.js';

/**
 * The event types a notification subscribes to, and the journal events each comes from:
 * - `run.failed`: a run's `run.failed`; `run.succeeded`: its `run.completed`;
 * - `approval.waiting`: a run's `wait.started` on an approval signal (an agent's tool call blocked for approval);
 * - `task.dead`: a task's `task.dead` (of any queue but the notifications' own, so a dead delivery never notifies);
 * - `run.timeout_warning`: a run started with a timeout passing `warn_at` of it (scheduled at its `run.started`).
 */
export const NOTIFY_EVENTS = [
  RUN_EVENT.runFailed,
  'run.succeeded',
  'approval.waiting',
  'task.dead',
  'run.timeout_warning',
] as const;

export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** The journal event types the notifications' subscription reads. */
export const JOURNAL_TYPES = [
  RUN_EVENT.runFailed,
  RUN_EVENT.runCompleted,
  RUN_EVENT.waitStarted,
  RUN_EVENT.runStarted,
  'task.dead',
];

/** The queue delivery tasks run on. */
export const NOTIFY_QUEUE = 'runledger.notifications';

/**
 * The notification event a journal event is, or null: a `wait.started` not on an approval signal, a
 * `run.started` without a deadline and the other streams' events are none.
 */
export function notifyEventOf(event: StoredEvent): NotifyEvent | null {
  const run = event.streamId.startsWith('run:');
  const data = (event.data ?? {}) as { name?: unknown; deadline?: unknown };
  if (run && event.type === RUN_EVENT.runFailed) return RUN_EVENT.runFailed;
  if (run && event.type === RUN_EVENT.runCompleted) return 'run.succeeded';
  if (run && event.type === RUN_EVENT.waitStarted && typeof data.name === 'string' && data.name.startsWith('approval:'))
    return 'approval.waiting';
  if (run && event.type === RUN_EVENT.runStarted && typeof data.deadline === 'number') return 'run.timeout_warning';
  if (event.streamId.startsWith('task:') && event.type === 'task.dead') return 'task.dead';
  return null;
}
