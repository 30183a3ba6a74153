import { CancelledError, LeaseLostError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import { TASK_CANCELLED, taskStream } from '../storage/tasks.js';

/**
 * An abort signal made when it is first read (a task handler's, a step's): an AbortController
 * costs more than a no-op task (measured, drain: 3% of the process's time), and most handlers
 * never look.
 */
export class LazyAbort {
  private controller: AbortController | null = null;
  private cause: unknown = undefined;
  private aborted = false;

  /** Why it aborted; undefined until it did. */
  get reason(): unknown {
    return this.cause;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.cause);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.cause = reason;
    this.controller?.abort(reason);
  }
}

/**
 * Why a running task's lease is gone, the reason its handler's signal aborts with (read only then): a `CancelledError`
 * when a newer task of its concurrency key cancelled it (`cancel_in_progress`: its history ends with `task.cancelled`;
 * it runs no more), else a `LeaseLostError` (it runs again elsewhere).
 *
 * @example abort.abort(await lostReason(journal, task.id))
 */
export async function lostReason(journal: Journal, id: string): Promise<Error> {
  const [last] = await journal.readStream(taskStream(id), { backwards: true, limit: 1 }).catch(() => []);
  return last?.type === TASK_CANCELLED
    ? new CancelledError(`task ${id}: ${(last.data as { reason: string }).reason}`)
    : new LeaseLostError(`task ${id}: lease lost`);
}
