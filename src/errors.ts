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
    super(problems && problems.length > 1 ? problems.map((p) => `${p.path}: ${p.message}`).join('; ') : `${path}: ${message}`);
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

/** The run was cancelled: thrown into workflow code at its next `ctx` call, and by a handle's `result()`. */
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

/** An error as the journal records it: `Name: message`. */
export function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
