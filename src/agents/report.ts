import { backoffDelay } from '../backoff.js';
import { RunledgerError, ValidationError } from '../errors.js';
import { currentStatus } from '../runtime/read/view.js';
import type { SessionReport } from './session.js';

/** A report is written within about 7 s of retries when the store is briefly unreachable. */
const REPORT_ATTEMPTS = 8;
const REPORT_BACKOFF = { baseMs: 100, factor: 2, maxMs: 2000, jitter: 0.2 };

/** An HTTP agent's report, checked; a report of 0.1 (COMPLETED, FAILED) is read as today's. */
export function checkReport(body: { status: string; error_message?: string | null }): SessionReport {
  const { status, error_message: error } = (body ?? {}) as { status?: unknown; error_message?: unknown };
  const spelled = typeof status === 'string' ? currentStatus(status) : status;
  if (spelled !== 'success' && spelled !== 'failed')
    throw new ValidationError('status', `must be success or failed (got ${JSON.stringify(status)})`);
  if (error !== undefined && error !== null && (typeof error !== 'string' || error.length > 2000))
    throw new ValidationError('error_message', 'must be a string of at most 2000 characters');
  return { status: spelled, error_message: (error as string | null | undefined) ?? null };
}

/** `fn`, tried again with backoff while the store is unreachable (a RunledgerError is an answer, thrown at once). */
export async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      // a RunledgerError is an answer (not found, conflict, bad input); anything else is the store
      if (error instanceof RunledgerError || attempt >= REPORT_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt, REPORT_BACKOFF)));
    }
  }
}
