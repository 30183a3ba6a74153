/**
 * The failure kinds of runledger. Each has a stable string `code`; the HTTP face maps codes to
 * statuses in one place. The retry decision is in the type: a `TerminalError` thrown by a task
 * handler is never retried, anything else is retried by policy.
 *
 * @example
 * try { await journal.append('order-1', events, { expectedVersion: 3 }) }
 * catch (e) { if (e instanceof ConflictError) reloadAndRetry() }
 */
export class RunledgerError extends Error {
  readonly code: string = 'internal';
  override name = 'RunledgerError';
}

/** The named thing does not exist. */
export class NotFoundError extends RunledgerError {
  override readonly code = 'not_found';
  override name = 'NotFoundError';
}

export interface Problem {
  path: string;
  message: string;
}

/**
 * Input was rejected; `path` names the bad field (`payload`, `events[2].data`, …) and `problems`
 * lists every one found when there are several. Nothing was written.
 */
export class ValidationError extends RunledgerError {
  override readonly code = 'validation';
  override name = 'ValidationError';
  readonly problems: Problem[];
  constructor(
    readonly path: string,
    message: string,
    problems?: Problem[],
  ) {
    super(
      problems && problems.length > 1
        ? problems.map((p) => `${p.path}: ${p.message}`).join('; ')
        : `${path}: ${message}`,
    );
    this.problems = problems ?? [{ path, message }];
  }

  /** One error for all of `problems` (at least one), named after the first. */
  static of(problems: Problem[]): ValidationError {
    const [first] = problems;
    if (!first) throw new Error('ValidationError.of needs a problem');
    return new ValidationError(first.path, first.message, problems);
  }
}

/** The write lost a race: a stream's expected version did not match, or the state forbids it. */
export class ConflictError extends RunledgerError {
  override readonly code: string = 'conflict';
  override name = 'ConflictError';
}

/** A heartbeat, completion or cursor advance carried a lease token that is no longer current. */
export class LeaseLostError extends ConflictError {
  override readonly code = 'lease_lost';
  override name = 'LeaseLostError';
}

/** Thrown by a handler to say "do not retry": the task goes straight to dead. */
export class TerminalError extends RunledgerError {
  override readonly code = 'terminal';
  override name = 'TerminalError';
}

/** Replayed workflow code asked for another call than the journal recorded at that position. The run fails. */
export class NonDeterminismError extends RunledgerError {
  override readonly code = 'non_determinism';
  override name = 'NonDeterminismError';
}

/** A failure worth retrying, but not before `retryAfterMs` (a 429's `Retry-After`, say). */
export class RetryAfterError extends RunledgerError {
  override readonly code = 'retry_after';
  override name = 'RetryAfterError';
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

/**
 * The run (or task) was cancelled: thrown into workflow code at its next `ctx` call, by a handle's `result()`, and as the
 * reason of a running task's `signal` when a newer task of its key took its slot (`cancel_in_progress`).
 */
export class CancelledError extends RunledgerError {
  override readonly code = 'cancelled';
  override name = 'CancelledError';
}

/** An attempt ran past its timeout. Retried by policy like any other failure. */
export class TimeoutError extends RunledgerError {
  override readonly code = 'timeout';
  override name = 'TimeoutError';
}

/**
 * A step ran out of time for good: a poll whose maximum wait passed without its condition holding,
 * a callback that never came. Not retried; workflow code can catch it and route on it.
 */
export class StepTimedOutError extends RunledgerError {
  override readonly code = 'timed_out';
  override name = 'StepTimedOutError';
}

/**
 * A run passed its budget (tokens, cost, tool calls, steps or wall time) and was not allowed more: the run fails, its
 * compensations run. The message names the budget and the figures.
 *
 * @example new BudgetExceededError('tokens', 41_200, 40_000, 'budget: 41,200 of 40,000 tokens')
 */
export class BudgetExceededError extends TerminalError {
  // TerminalError's code is typed as its own literal; the value is this error's
  override readonly code = 'budget_exceeded' as 'terminal';
  override name = 'BudgetExceededError';
  constructor(
    readonly budget: string,
    readonly used: number,
    readonly limit: number,
    message: string,
  ) {
    super(message);
  }
}

/** An error as the journal records it: `Name: message`. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * The database cannot be reached or cannot take the write right now (connection refused or
 * dropped, server shutting down, SQLite busy, out of disk, I/O error). Nothing was written, or the
 * write was rolled back; the same request may succeed later. The HTTP face answers 503 with
 * `Retry-After` and this message only: the driver's text (addresses, file paths) stays out of it.
 *
 * @example
 * const unavailable = storeUnavailable(error); // from a pg or better-sqlite3 error
 * if (unavailable) return retryLater(unavailable.retryAfterSeconds);
 */
export class StoreUnavailableError extends RunledgerError {
  override readonly code = 'store_unavailable';
  override name = 'StoreUnavailableError';
  constructor(
    readonly reason: 'unreachable' | 'busy' | 'full' | 'io',
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(`the database is ${REASON_TEXT[reason]}; retry later`, options);
  }
}

const REASON_TEXT: Record<StoreUnavailableError['reason'], string> = {
  unreachable: 'unavailable',
  busy: 'busy',
  full: 'out of space',
  io: 'failing to read or write',
};

// Node socket errors seen by a PostgreSQL client when the server is down or the network drops.
const NET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
]);
// pg's own messages for a connection that broke or never came, which carry no code.
const PG_MESSAGES = new RegExp(
  '^(Connection terminated|Client has encountered a connection error|' +
    'timeout exceeded when trying to connect|Connection ended unexpectedly)',
);

/**
 * A StoreUnavailableError for `error` when it (or one of an AggregateError's `errors`: a connect to
 * `localhost` tries IPv4 and IPv6) says the database is out of reach or cannot write for now; null
 * for any other error. `cause` is not followed: an http_request step's network failure carries its
 * socket error as a cause, and is not a database outage.
 * Recognised: socket errors (ECONNREFUSED, ECONNRESET, …), PostgreSQL SQLSTATE classes 08
 * (connection exception), 53 (insufficient resources: 53100 disk full, 53300 too many
 * connections) and 57P01–57P03 (shutting down, cannot connect now), pg's "Connection terminated"
 * family, and SQLite's SQLITE_BUSY/LOCKED, SQLITE_FULL, SQLITE_IOERR and SQLITE_CANTOPEN families.
 *
 * @example
 * const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
 * storeUnavailable(refused)?.reason // 'unreachable'
 */
export function storeUnavailable(error: unknown): StoreUnavailableError | null {
  if (error instanceof StoreUnavailableError) return error;
  if (typeof error !== 'object' || error === null || error instanceof RunledgerError) return null;
  const candidates = [error, ...(error instanceof AggregateError ? (error.errors as unknown[]) : [])];
  for (const item of candidates) {
    if (typeof item !== 'object' || item === null) continue;
    const reason = unavailableReason(item as { code?: unknown; message?: unknown });
    if (reason !== null) return new StoreUnavailableError(reason, reason === 'busy' ? 1 : 5, { cause: error });
  }
  return null;
}

function unavailableReason({
  code,
  message,
}: {
  code?: unknown;
  message?: unknown;
}): StoreUnavailableError['reason'] | null {
  if (typeof code === 'string') {
    if (NET_CODES.has(code)) return 'unreachable';
    if (/^08[0-9A-Z]{3}$/.test(code) || /^57P0[1-3]$/.test(code) || code === '53300') return 'unreachable';
    if (code === '53100') return 'full';
    if (/^53[0-9A-Z]{3}$/.test(code)) return 'busy';
    if (/^SQLITE_(BUSY|LOCKED)/.test(code)) return 'busy';
    if (code.startsWith('SQLITE_FULL')) return 'full';
    if (/^SQLITE_(IOERR|CANTOPEN)/.test(code)) return 'io';
  }
  if (typeof message === 'string' && PG_MESSAGES.test(message)) return 'unreachable';
  return null;
}
