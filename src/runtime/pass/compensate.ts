import { backoffDelay } from '../../backoff.js';
import { describeError, LeaseLostError } from '../../errors.js';
import { DEFAULT_RETRY } from './calls.js';
import { confirmStep, type Confirm, type ConfirmHost } from './confirm.js';
import { RUN_EVENT } from '../events.js';
import type { Seq } from './history.js';
import type { StepContext } from '../workflow.js';
import type { EngineEventMap } from '../../observe/events.js';

/** The undo of a completed call, remembered by the pass that saw it complete (or replayed it). */
export interface Compensation {
  seq: Seq;
  name: string;
  output: unknown;
  undo: (output: any, ctx: StepContext) => Promise<unknown>;
  /** A poll's cancel: its events say so (`cancel: true`), and the run view shows them on the poll's step. */
  cancel?: true;
  /** Polled once the cancel was accepted, until the service confirms it (a poll's `cancel.until`). */
  confirm?: Confirm;
}

/** What running compensations needs of the pass. */
export interface CompensationHost extends ConfirmHost {
  /** The calls whose compensation the journal already records as completed, or as failed. */
  readonly done: ReadonlySet<Seq>;
  readonly failed: ReadonlySet<Seq>;
  /** Fires when this worker lost the run. */
  readonly signal: AbortSignal;
  /** A compensation ended, as journaled (`compensation:end`). */
  ended?(report: CompensationReport): void;
}

/** How one compensation ended, as `compensation:end` reports it. */
export type CompensationReport = Omit<EngineEventMap['compensation:end'], 'runId' | 'workflow'>;

/**
 * Runs `compensations` newest first, each once (a completed or failed one is not run again after a crash or a
 * wait): up to DEFAULT_RETRY.maxAttempts tries each, with a short backoff, journaled as `compensation.started` /
 * `.completed` / `.failed`. A cancel with a confirmation is complete only once confirmed (or given up on, see
 * confirmStep); while it waits, `wakeAt` says when the next pass goes on (the older ones wait for it). A lost
 * lease stops it (the next owner goes on). `ran` and `failed` count the whole cancellation, earlier passes too.
 */
export async function runCompensations(
  host: CompensationHost,
  compensations: readonly Compensation[],
): Promise<{ ran: number; failed: number; wakeAt: number | null }> {
  let ran = 0;
  let failed = 0;
  for (const c of [...compensations].reverse()) {
    ran += 1;
    if (host.done.has(c.seq)) continue;
    if (host.failed.has(c.seq)) {
      failed += 1;
      continue;
    }
    const mark = c.cancel ? { cancel: true } : {};
    // a cancel already accepted is not sent again: its confirmation goes on
    const sent = c.confirm !== undefined && host.confirming.has(c.seq);
    let accepted = sent;
    const key = `${host.runId}:${c.name}#${c.seq}:compensate`;
    for (let attempt = 1; !sent; attempt++) {
      await host.write([{ type: RUN_EVENT.compensationStarted, data: { seq: c.seq, name: c.name, attempt, ...mark } }]);
      try {
        const result = await c.undo(c.output, { idempotencyKey: key, attempt, signal: host.signal });
        accepted = true;
        if (c.confirm) break;
        // an undo that decided there was nothing to undo says why ({ skipped: reason }): the journal keeps the reason
        const skipped = (result as { skipped?: unknown } | null)?.skipped;
        await host.write([
          {
            type: RUN_EVENT.compensationCompleted,
            data: { seq: c.seq, name: c.name, attempt, ...mark, ...(typeof skipped === 'string' ? { skipped } : {}) },
          },
        ]);
        const reason = typeof skipped === 'string' ? { outcome: 'skipped' as const, reason: skipped } : null;
        host.ended?.({ step: c.name, cancel: c.cancel === true, ...(reason ?? { outcome: 'completed' }) });
        break;
      } catch (error) {
        if (error instanceof LeaseLostError) throw error;
        if (attempt >= DEFAULT_RETRY.maxAttempts) {
          failed += 1;
          await host.write([
            {
              type: RUN_EVENT.compensationFailed,
              data: { seq: c.seq, name: c.name, attempt, ...mark, error: describeError(error) },
            },
          ]);
          host.ended?.({ step: c.name, cancel: c.cancel === true, outcome: 'failed', error: describeError(error) });
          break;
        }
        await new Promise((resolve) =>
          setTimeout(resolve, backoffDelay(attempt, { baseMs: 100, factor: 2, maxMs: 2000, jitter: 0.2 })),
        );
      }
    }
    if (!c.confirm || !accepted) continue;
    const step = await confirmStep(host, c.seq, c.name, c.confirm);
    if ('wakeAt' in step) return { ran, failed, wakeAt: step.wakeAt };
    await host.write([
      { type: RUN_EVENT.compensationCompleted, data: { seq: c.seq, name: c.name, ...mark, ...step.done } },
    ]);
    host.ended?.({ step: c.name, cancel: c.cancel === true, outcome: 'completed' });
  }
  return { ran, failed, wakeAt: null };
}
