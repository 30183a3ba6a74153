import type { Backoff } from '../backoff.js';
import type { Duration } from '../duration.js';
import { TerminalError } from '../errors.js';
import { checkJson } from '../json.js';
import type { EngineEvents } from '../observe/events.js';
import type { Task } from '../storage/store.js';

/* What a worker runs (a handler, with its task's context) and how it is set up. */

export interface TaskContext {
  task: Task;
  /** 1 on the first try. */
  attempt: number;
  /**
   * Fires when the lease is lost or the worker stops hard (a `LeaseLostError`: stop work, the task runs again
   * elsewhere), or when a newer task of its concurrency key cancelled it (`cancel_in_progress`, a `CancelledError`: it
   * runs no more). Either way what the handler returns or throws after is discarded.
   */
  signal: AbortSignal;
}

/** Returns the task's result (JSON). Throw to fail the attempt; throw `TerminalError` to skip retries. */
export type TaskHandler = (payload: any, ctx: TaskContext) => Promise<unknown>;

export interface WorkOptions {
  /** Tasks run at once by this worker. */
  concurrency?: number;
  /**
   * Tasks claimed beyond `concurrency` and held until a slot frees (at most this many; default:
   * sixteen times `concurrency`), so a finished handler's next task starts without waiting for a
   * claim, and one commit carries more tasks. Only while handlers are short (under 100 ms on
   * average), and more than `concurrency` only as many as the slots start within 25 ms at the
   * handlers' average pace; a held task not started within 2 s, and every held task when the
   * worker stops, is given back: ready again, its attempt not counted (and after a give-back,
   * nothing is held again until a handler finishes).
   */
  prefetch?: number;
  /** How long a claim holds; heartbeats renew it every third of that. */
  leaseMs?: number;
  backoff?: Backoff;
  /** The fallback poll when no wake-up arrives. */
  pollMs?: number;
  workerId?: string;
  maxResultBytes?: number;
  onError?: (error: unknown) => void;
  /** The tags this worker has (read at each claim): it claims tagged tasks only of these. Default: any task. */
  tags?: () => string[];
  /**
   * Take tasks in batches: the handler is a `BatchTaskHandler` (queue/batch.ts), called with up to `maxSize` tasks
   * claimed together once that many wait or `timeout` after the first; each task settled by its own result.
   * `concurrency` defaults to `maxSize` and may not be less.
   */
  batch?: { maxSize: number; timeout: Duration };
  /**
   * Units a task's handler really used, from its result (tokens from a model's answer): charged to the task's
   * `rateLimit` past the units it took, before the task is settled (see `ratedHandler`).
   */
  charge?: (result: any, task: Task) => number;
  /** Called after each settled attempt: for metrics and tests. */
  onSettled?: (task: Task, outcome: 'completed' | 'failed' | 'dead' | 'lost') => void;
  /** Where claims, retries, dead letters and lost leases are reported (the engine passes its own). */
  events?: EngineEvents;
}

/** A result too big or not JSON fails its attempt for good: another try would return the same. */
export function checkResult(result: unknown, maxBytes: number): void {
  try {
    checkJson('result', result, maxBytes);
  } catch (error) {
    throw new TerminalError((error as Error).message);
  }
}
