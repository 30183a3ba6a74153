import { toMs, type Duration } from '../duration.js';
import { ValidationError } from '../errors.js';
import type { TaskContext, TaskHandler } from './handler.js';

/** A worker that takes its tasks in batches: up to `maxSize` at once, waiting up to `timeout` for a batch to fill. */
export interface TaskBatch {
  /** 1…1,000 tasks per call of the handler. */
  maxSize: number;
  /** 10 ms…1 h from the batch's first task: the handler is called then with the tasks it has. */
  timeout: Duration;
}

/** One task of a batch: its payload and its context (its attempt, its abort signal). */
export interface BatchItem<P = any> {
  payload: P;
  ctx: TaskContext;
}

/**
 * A batch's handler: gets the tasks claimed together and returns one result per task, in order. A result that is an
 * `Error` fails that task alone (retried by its own backoff; a `TerminalError` for good); throwing fails them all.
 */
export type BatchTaskHandler<P = any> = (items: BatchItem<P>[]) => Promise<unknown[]>;

const TIMEOUT_MIN_MS = 10;
const TIMEOUT_MAX_MS = 3_600_000;

/** The batch checked, its timeout in ms; a ValidationError names the field (`batch.maxSize`). */
export function checkTaskBatch(
  batch: unknown,
  concurrency: number | undefined,
): { maxSize: number; timeoutMs: number } {
  if (typeof batch !== 'object' || batch === null) throw new ValidationError('batch', 'must be { maxSize, timeout }');
  const { maxSize, timeout } = batch as Record<string, unknown>;
  if (typeof maxSize !== 'number' || !Number.isInteger(maxSize) || maxSize < 1 || maxSize > 1_000)
    throw new ValidationError(
      'batch.maxSize',
      `must be a whole number from 1 to 1000 (got ${JSON.stringify(maxSize)})`,
    );
  const timeoutMs = toMs(timeout as Duration, 'batch.timeout');
  if (timeoutMs < TIMEOUT_MIN_MS || timeoutMs > TIMEOUT_MAX_MS)
    throw new ValidationError('batch.timeout', `must be from 10ms to 1h (got ${JSON.stringify(timeout)})`);
  if (concurrency !== undefined && concurrency < maxSize)
    throw new ValidationError(
      'concurrency',
      `must be at least batch.maxSize (${maxSize}): a batch's tasks run at once`,
    );
  return { maxSize, timeoutMs };
}

interface Open {
  items: BatchItem[];
  settle: Array<{ resolve(value: unknown): void; reject(error: unknown): void }>;
  timer?: NodeJS.Timeout;
}

/**
 * The task handler of a batched worker: each claimed task joins the open batch of this worker and waits (its lease
 * renewed by the worker's heartbeat) until the batch holds `maxSize` tasks or `timeout` passed since its first; then
 * `handler` is called once with them, and each task is settled with its own result. A task whose lease is lost while
 * it waits leaves the batch (it runs again elsewhere). Once the worker stops (`drain`), the open batch is handed over
 * at once, without waiting for its timeout. A crash before the handler's results are committed leaves every
 * task of the batch to run again after its lease, as any task.
 *
 * @example engine.work('emails', async (items) => sendAll(items), { batch: { maxSize: 50, timeout: '1s' } })
 */
export function batchHandler(handler: BatchTaskHandler, batch: TaskBatch): TaskHandler & { drain(): void } {
  const { maxSize, timeoutMs } = checkTaskBatch(batch, undefined);
  let open: Open | null = null;
  let draining = false;
  const flush = (b: Open) => {
    clearTimeout(b.timer);
    if (open === b) open = null;
    if (b.items.length === 0) return;
    handler(b.items).then(
      (results) => {
        if (!Array.isArray(results) || results.length !== b.items.length) {
          const got = Array.isArray(results) ? `${results.length} results` : typeof results;
          const error = new Error(
            `the batch handler returned ${got}: one result per task expected (${b.items.length})`,
          );
          for (const s of b.settle) s.reject(error);
          return;
        }
        for (const [i, result] of results.entries()) {
          if (result instanceof Error) b.settle[i]!.reject(result);
          else b.settle[i]!.resolve(result);
        }
      },
      (error) => {
        for (const s of b.settle) s.reject(error);
      },
    );
  };
  const take: TaskHandler = (payload, ctx) =>
    new Promise((resolve, reject) => {
      if (open === null) {
        const b: Open = { items: [], settle: [] };
        b.timer = setTimeout(() => flush(b), timeoutMs);
        open = b;
      }
      const b = open;
      const item = { payload, ctx };
      b.items.push(item);
      b.settle.push({ resolve, reject });
      ctx.signal.addEventListener(
        'abort',
        () => {
          const at = b.items.indexOf(item);
          // only while it waits: once the handler has it, the handler sees the signal
          if (open !== b || at < 0) return;
          b.items.splice(at, 1);
          b.settle.splice(at, 1)[0]!.reject(ctx.signal.reason ?? new Error('the task was aborted'));
        },
        { once: true },
      );
      if (b.items.length >= maxSize || draining) flush(b);
    });
  // a stopping worker waits for its running tasks: the open batch goes now, and each task after it alone
  const drain = () => {
    draining = true;
    if (open) flush(open);
  };
  return Object.assign(take, { drain });
}
