import type { Task } from '../runtime/operate/operator.js';

export function formatTask(task: Task): string {
  const error = task.lastError ? `  last error: ${task.lastError}` : '';
  return `${task.id}  ${task.queue}  ${task.state}  attempts ${task.attempts}/${task.maxAttempts}${error}`;
}
