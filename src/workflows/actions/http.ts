import { RetryAfterError, RunledgerError, TerminalError } from '../../errors.js';
import { checkUrl, describe, REDIRECTS, resolveChecked, send, type Attempt, type Received } from './http-send.js';

/** The config of an `http_request` step, as a stored workflow holds it. */
export interface HttpRequestConfig {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeout_seconds?: number;
}

/** What an `http_request` step returns: header names lower-cased, a JSON body parsed. */
export interface HttpResponseOutput {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  truncated?: true;
}

/**
 * What the caller supplies: the step's idempotency key (stable across its retries), the abort signal of
 * the attempt, the allowlist (`parseAllowlist(process.env.RUNLEDGER_HTTP_ALLOW)`), and optionally a
 * resolver standing in for DNS.
 */
export interface HttpContext {
  idempotencyKey: string;
  signal: AbortSignal;
  allow: string[];
  lookup?: (host: string) => Promise<{ address: string; family: 4 | 6 }[]>;
  /** The step attempt's trace context (tracing on): sent as `traceparent` unless the config sets one. */
  traceparent?: string;
  /** Keep the connection for the next request to the same checked address (a function's calls); default: close it. */
  reuse?: boolean;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const MAX_REDIRECTS = 5;
const DEFAULT_TIMEOUT_SECONDS = 30;
const MAX_TIMEOUT_SECONDS = 300;
/** Set by the client from the URL and the body; a user value would fight it. */
const MANAGED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);
/** Dropped when a redirect turns the request into a body-less GET (fetch's request-body-header names). */
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
/** Dropped on a redirect to another origin, as fetch drops `authorization`. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];

/**
 * Sends the request of an `http_request` step and returns its response. Refuses (TerminalError) bad
 * config, non-http(s) URLs, URLs with credentials, and addresses that are loopback, private, link-local or
 * reserved unless allowlisted; each redirect hop is checked again, and the connection goes to the very
 * address that was checked (no DNS rebinding). 5xx, 408 and network failures throw a plain Error (retried),
 * 429 a RetryAfterError, other 4xx a TerminalError.
 *
 * @example
 * const out = await httpRequest(
 *   { method: 'POST', url: 'https://api.example.com/orders', body: { sku: 'A1' } },
 *   { idempotencyKey: 'run_01:charge', signal, allow: parseAllowlist(process.env.RUNLEDGER_HTTP_ALLOW) },
 * );
 * out.status // 201
 */
export async function httpRequest(config: HttpRequestConfig, ctx: HttpContext): Promise<HttpResponseOutput> {
  let attempt = readAttempt(config, ctx.idempotencyKey);
  if (ctx.traceparent && !attempt.headers.has('traceparent'))
    attempt.headers.set('traceparent', ['traceparent', ctx.traceparent]);
  const timeoutSeconds = readTimeout(config);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort('timeout'), timeoutSeconds * 1000);
  const cancel = (): void => deadline.abort('cancelled');
  if (ctx.signal.aborted) cancel();
  ctx.signal.addEventListener('abort', cancel, { once: true });
  const stopped = (): Error =>
    deadline.signal.reason === 'timeout'
      ? new Error(`${describe(attempt)} timed out after ${timeoutSeconds} s`)
      : new Error(`${describe(attempt)} was aborted`, { cause: ctx.signal.reason });
  try {
    for (let redirects = 0; ; redirects += 1) {
      checkUrl(attempt.url);
      const address = await resolveChecked(attempt, ctx, deadline.signal, stopped);
      const received = await send(attempt, address, deadline.signal, stopped, ctx.reuse === true);
      const location = REDIRECTS.has(received.status) ? received.headers.location : undefined;
      if (location === undefined) return output(attempt, received);
      if (redirects === MAX_REDIRECTS)
        throw new TerminalError(`${describe(attempt)} failed: more than ${MAX_REDIRECTS} redirects`);
      attempt = redirected(attempt, received.status, location);
    }
  } catch (error) {
    // a plain Error without a status is the network's or this request's own timeout: say which, for the
    // retry's error class (observe/error-class.ts); an abort by the step's signal is the step's (its timeout, a cancel)
    if (error instanceof Error && !(error instanceof RunledgerError) && !('status' in error) && !ctx.signal.aborted)
      Object.assign(error, { errorClass: deadline.signal.reason === 'timeout' ? 'timeout' : 'network' });
    throw error;
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', cancel);
  }
}

function readTimeout(config: HttpRequestConfig): number {
  const seconds: unknown = config.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_TIMEOUT_SECONDS) {
    throw new TerminalError(
      `http_request: timeout_seconds must be a number in (0, ${MAX_TIMEOUT_SECONDS}] (got ${String(seconds)})`,
    );
  }
  return seconds;
}

function readAttempt(config: HttpRequestConfig, idempotencyKey: string): Attempt {
  if (typeof config !== 'object' || config === null)
    throw new TerminalError('http_request: the config must be an object');
  const method: unknown = config.method;
  if (typeof method !== 'string' || !METHODS.includes(method)) {
    throw new TerminalError(
      `http_request: method must be one of ${METHODS.join(', ')} (got ${JSON.stringify(method)})`,
    );
  }
  let url: URL;
  try {
    url = new URL(String(config.url));
  } catch {
    throw new TerminalError(`http_request: url must be an absolute URL (got ${JSON.stringify(config.url)})`);
  }
  url.hash = '';
  const headers = new Map<string, [string, string]>();
  const given: unknown = config.headers ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given))
    throw new TerminalError('http_request: headers must be an object of strings');
  for (const [name, value] of Object.entries(given)) {
    if (typeof value !== 'string') throw new TerminalError(`http_request: header '${name}' must be a string`);
    headers.set(name.toLowerCase(), [name, value]);
  }
  for (const [name, value] of headers.values()) checkHeader(name, value);
  const body = encodeBody(method, config.body, headers);
  if (!headers.has('idempotency-key')) headers.set('idempotency-key', ['Idempotency-Key', idempotencyKey]);
  if (!headers.has('user-agent')) headers.set('user-agent', ['User-Agent', 'runledger']);
  checkHeader('Idempotency-Key', headers.get('idempotency-key')![1]);
  return { method, url, headers, body };
}

function checkHeader(name: string, value: string): void {
  if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(name))
    throw new TerminalError(`http_request: '${name}' is not a valid header name`);
  if (MANAGED_HEADERS.has(name.toLowerCase()))
    throw new TerminalError(`http_request: header '${name}' is set by http_request itself`);
  if (/[\r\n\0]/.test(value)) throw new TerminalError(`http_request: header '${name}' contains CR, LF or NUL`);
  if (!/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) {
    throw new TerminalError(`http_request: header '${name}' contains a control character or one outside Latin-1`);
  }
}

/** A string goes as text, anything else but null as JSON; a content-type the user set wins. */
function encodeBody(method: string, body: unknown, headers: Attempt['headers']): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (method === 'GET') throw new TerminalError('http_request: a GET request cannot carry a body');
  let text: string | undefined;
  let contentType = 'text/plain; charset=utf-8';
  if (typeof body === 'string') {
    text = body;
  } else {
    contentType = 'application/json';
    try {
      text = JSON.stringify(body);
    } catch (error) {
      throw new TerminalError(`http_request: the body cannot be sent as JSON (${(error as Error).message})`);
    }
    if (text === undefined) throw new TerminalError(`http_request: the body cannot be sent as JSON (a ${typeof body})`);
  }
  if (!headers.has('content-type')) headers.set('content-type', ['Content-Type', contentType]);
  return Buffer.from(text, 'utf8');
}

/** The next hop, with fetch's rules: 303, and 301/302 after a POST, become a GET without body. */
function redirected(attempt: Attempt, status: number, location: string): Attempt {
  let url: URL;
  try {
    url = new URL(location, attempt.url);
  } catch {
    throw new TerminalError(
      `${describe(attempt)} failed: ${status} redirect to an invalid URL ${JSON.stringify(location)}`,
    );
  }
  url.hash = '';
  const headers = new Map(attempt.headers);
  let { method, body } = attempt;
  if ((status === 303 && method !== 'GET') || ((status === 301 || status === 302) && method === 'POST')) {
    method = 'GET';
    body = undefined;
    for (const name of BODY_HEADERS) headers.delete(name);
  }
  if (url.origin !== attempt.url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
  return { method, url, headers, body };
}

function output(attempt: Attempt, received: Received): HttpResponseOutput {
  const { status } = received;
  if (status >= 400) {
    const snippet = decodeText(received).replace(/\s+/g, ' ').trim().slice(0, 200);
    const message = `${describe(attempt)} failed: ${status} ${received.statusText}${snippet === '' ? '' : `: ${snippet}`}`;
    // the status goes with the error (and into the journal), so a workflow can map it to a failure state
    if (status === 429)
      throw Object.assign(new RetryAfterError(message, retryAfterMs(received.headers['retry-after'])), { status });
    if (status === 408 || status >= 500) throw Object.assign(new Error(message), { status });
    throw Object.assign(new TerminalError(message), { status });
  }
  const result: HttpResponseOutput = { status, headers: received.headers, body: decodeBody(received) };
  if (received.truncated) result.truncated = true;
  return result;
}

/** `Retry-After` as delay-seconds or an HTTP-date; absent or unreadable is 0. */
function retryAfterMs(value: string | undefined): number {
  if (value === undefined) return 0;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? 0 : Math.max(0, date - Date.now());
}

/** JSON when the content-type says so (`application/json`, `…+json`) and it parses; text otherwise. */
function decodeBody(received: Received): unknown {
  const text = decodeText(received);
  const mediaType = (received.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (mediaType !== 'application/json' && !/^application\/[^/]+\+json$/.test(mediaType)) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The body in the content-type's charset (UTF-8 when absent or unknown). Bodies are not decompressed. */
function decodeText(received: Received): string {
  const charset = /;\s*charset="?([^";\s]+)/i.exec(received.headers['content-type'] ?? '')?.[1] ?? 'utf-8';
  try {
    return new TextDecoder(charset).decode(received.body);
  } catch {
    return new TextDecoder('utf-8').decode(received.body);
  }
}
