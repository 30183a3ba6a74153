import { describeError, RunledgerError, ValidationError, type Problem } from '../errors.js';

/** An HTTP-only failure: a body too large, bad JSON, a missing token. */
export class HttpError extends RunledgerError {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    override readonly code: string,
    message: string,
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
};

export interface ErrorBody {
  error: { code: string; message: string; problems?: Problem[] };
}

/** The status and JSON body for any thrown value; unknown errors are 500 with their message. */
export function errorResponse(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof HttpError) return { status: error.status, body: { error: { code: error.code, message: error.message } } };
  if (error instanceof ValidationError) return { status: 400, body: { error: { code: error.code, message: error.message, problems: error.problems } } };
  if (error instanceof RunledgerError) return { status: STATUS[error.code] ?? 500, body: { error: { code: error.code, message: error.message } } };
  return { status: 500, body: { error: { code: 'internal', message: describeError(error) } } };
}
