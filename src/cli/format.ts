import type { Task } from '../storage/store.js';

export function formatTask(task: Task): string {
  const error = task.lastError ? `  last error: ${task.lastError}` : '';
  return `${task.id}  ${task.queue}  ${task.state}  attempts ${task.attempts}/${task.maxAttempts}${error}`;
}
