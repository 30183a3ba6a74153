import { describeError, RunledgerError, storeUnavailable, ValidationError, type Problem } from '../errors.js';

/** An HTTP-only failure: a body too large, bad JSON, a missing token. */
export class HttpError extends RunledgerError {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    override readonly code: string,
    message: string,
    /** Sent with the answer (a 429's `Retry-After`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The one place an error becomes an HTTP status. */
const STATUS: Record<string, number> = {
  validation: 400,
  interpolation: 400,
  not_found: 404,
  conflict: 409,
  lease_lost: 409,
  cancelled: 409,
  timeout: 408,
  store_unavailable: 503,
};

export interface ErrorBody {
  error: { code: string; message: string; problems?: Problem[] };
}

/**
 * The status, JSON body and extra headers for any thrown value. A database that is down or cannot
 * write (StoreUnavailableError, or a driver error that says so) is 503 with `Retry-After` and no
 * driver text; other unknown errors are 500 with their message.
 */
export function errorResponse(error: unknown): { status: number; body: ErrorBody; headers: Record<string, string> } {
  if (error instanceof HttpError)
    return {
      status: error.status,
      body: { error: { code: error.code, message: error.message } },
      headers: error.headers,
    };
  if (error instanceof ValidationError)
    return {
      status: 400,
      body: { error: { code: error.code, message: error.message, problems: error.problems } },
      headers: {},
    };
  const unavailable = storeUnavailable(error);
  if (unavailable) {
    return {
      status: STATUS[unavailable.code]!,
      body: { error: { code: unavailable.code, message: unavailable.message } },
      headers: { 'retry-after': String(unavailable.retryAfterSeconds) },
    };
  }
  if (error instanceof RunledgerError)
    return {
      status: STATUS[error.code] ?? 500,
      body: { error: { code: error.code, message: error.message } },
      headers: {},
    };
  return { status: 500, body: { error: { code: 'internal', message: describeError(error) } }, headers: {} };
}
