import { backoffDelay } from '../../backoff.js';
import { describeError, LeaseLostError } from '../../errors.js';
import type { NewEvent } from '../../storage/store.js';
import { DEFAULT_RETRY } from './calls.js';
import { RUN_EVENT } from '../events.js';
import type { Seq } from './history.js';
import type { StepContext } from '../workflow.js';

/** The undo of a completed call, remembered by the pass that saw it complete (or replayed it). */
export interface Compensation {
  seq: Seq;
  name: string;
  output: unknown;
  undo: (output: any, ctx: StepContext) => Promise<unknown>;
}

/** What running compensations needs of the pass. */
export interface CompensationHost {
  readonly runId: string;
  /** The calls whose compensation the journal already records as completed. */
  readonly done: ReadonlySet<Seq>;
  write(events: NewEvent[]): Promise<void>;
  /** Fires when this worker lost the run. */
  readonly signal: AbortSignal;
}

/**
 * Runs `compensations` newest first, each once (a completed one is not run again after a crash):
 * up to DEFAULT_RETRY.maxAttempts tries each, with a short backoff, journaled as
 * `compensation.started` / `.completed` / `.failed`. A lost lease stops it (the next owner goes on).
 */
export async function runCompensations(
  host: CompensationHost,
  compensations: readonly Compensation[],
): Promise<{ ran: number; failed: number }> {
  let ran = 0;
  let failed = 0;
  for (const c of [...compensations].reverse()) {
    if (host.done.has(c.seq)) continue;
    ran += 1;
    const key = `${host.runId}:${c.name}#${c.seq}:compensate`;
    for (let attempt = 1; ; attempt++) {
      await host.write([{ type: RUN_EVENT.compensationStarted, data: { seq: c.seq, name: c.name, attempt } }]);
      try {
        const result = await c.undo(c.output, { idempotencyKey: key, attempt, signal: host.signal });
        // an undo that decided there was nothing to undo says why ({ skipped: reason }): the journal keeps the reason
        const skipped = (result as { skipped?: unknown } | null)?.skipped;
        await host.write([
          {
            type: RUN_EVENT.compensationCompleted,
            data: { seq: c.seq, name: c.name, attempt, ...(typeof skipped === 'string' ? { skipped } : {}) },
          },
        ]);
        break;
      } catch (error) {
        if (error instanceof LeaseLostError) throw error;
        if (attempt >= DEFAULT_RETRY.maxAttempts) {
          failed += 1;
          await host.write([
            {
              type: RUN_EVENT.compensationFailed,
              data: { seq: c.seq, name: c.name, attempt, error: describeError(error) },
            },
          ]);
          break;
        }
        await new Promise((resolve) =>
          setTimeout(resolve, backoffDelay(attempt, { baseMs: 100, factor: 2, maxMs: 2000, jitter: 0.2 })),
        );
      }
    }
  }
  return { ran, failed };
}
