import type { StoredEvent, Task } from '../storage/store.js';

/** One line per event: time, stream@version, type, data. */
export function formatEvent(event: StoredEvent): string {
  return `${new Date(event.timestamp).toISOString()}  #${event.position}  ${event.streamId}@${event.version}  ${event.type}  ${JSON.stringify(event.data)}`;
}

export function formatTask(task: Task): string {
  const error = task.lastError ? `  last error: ${task.lastError}` : '';
  return `${task.id}  ${task.queue}  ${task.state}  attempts ${task.attempts}/${task.maxAttempts}${error}`;
}
