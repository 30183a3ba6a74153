import { RunledgerError, type Problem } from '../errors.js';

/** A non-2xx answer of the API: its status, error code and, for 400, every problem. */
export class ApiError extends RunledgerError {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    override readonly code: string,
    message: string,
    readonly problems: Problem[] = [],
  ) {
    super(message);
  }
}

/** The server could not be reached at all (nothing listens, DNS, a reset): no HTTP answer to show. */
export class UnreachableError extends RunledgerError {
  override name = 'UnreachableError';
  override readonly code = 'unreachable';
}
