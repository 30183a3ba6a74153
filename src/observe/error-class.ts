import { RetryAfterError } from '../errors.js';

/**
 * What kind of failure a step or poll attempt met, as brief 004 §5.1 sorts them: a server error
 * (`5xx`), rate limiting (`429`), the network (connection refused or dropped, DNS), a timeout, a
 * client error (`4xx`, not retried by http_request), or anything else (`other`). A bounded set:
 * metrics label retries with it.
 */
export type ErrorClass = '5xx' | '429' | '4xx' | 'network' | 'timeout' | 'other';

export const ERROR_CLASSES: readonly ErrorClass[] = ['5xx', '429', '4xx', 'network', 'timeout', 'other'];

// Node's socket and DNS failures (and undici's, for a workflow's own fetch)
const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT',
]);
const TIMEOUT = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT']);
const TIMEOUT_NAMES = new Set(['TimeoutError', 'StepTimedOutError']);

/**
 * The class of `error`. An error may say it itself (`errorClass`: http_request marks its network
 * failures and its own timeout so, and the interpreter keeps the mark when it masks secrets out of
 * the message); else the HTTP `status` it carries decides (408 is a timeout), then its name
 * (`TimeoutError`, `StepTimedOutError`), then a socket error `code` on it or on its `cause`.
 *
 * @example errorClassOf(Object.assign(new Error('503 Service Unavailable'), { status: 503 })) // '5xx'
 */
export function errorClassOf(error: unknown): ErrorClass {
  if (typeof error !== 'object' || error === null) return 'other';
  const e = error as { errorClass?: unknown; status?: unknown; name?: unknown; code?: unknown; cause?: unknown };
  if (typeof e.errorClass === 'string' && (ERROR_CLASSES as readonly string[]).includes(e.errorClass))
    return e.errorClass as ErrorClass;
  if (error instanceof RetryAfterError) return '429';
  if (typeof e.status === 'number') {
    if (e.status === 429) return '429';
    if (e.status === 408) return 'timeout';
    if (e.status >= 500 && e.status <= 599) return '5xx';
    if (e.status >= 400 && e.status <= 499) return '4xx';
  }
  if (typeof e.name === 'string' && TIMEOUT_NAMES.has(e.name)) return 'timeout';
  for (const item of [error, e.cause]) {
    const code = (item as { code?: unknown } | null | undefined)?.code;
    if (typeof code !== 'string') continue;
    if (TIMEOUT.has(code)) return 'timeout';
    if (NETWORK.has(code)) return 'network';
  }
  return 'other';
}
