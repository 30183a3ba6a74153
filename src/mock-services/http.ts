import type { IncomingHttpHeaders } from 'node:http';
import type { JobFault } from './faults.js';
import type { CancelFault } from './job.js';

/** A request as a handler sees it: the JSON body already parsed. */
export interface MockRequest {
  method: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  /** Set when a fault rule says the work this request starts ends `failed` or never ends. */
  jobFault?: JobFault;
  /** Set when a fault rule makes this cancel asynchronous (`cancelling` first) or never confirmed. */
  cancelFault?: CancelFault;
}

/** What a handler answers: a JSON `body`, or raw `bytes` with their `headers`. */
export interface MockResponse {
  status: number;
  body?: unknown;
  bytes?: Buffer;
  headers?: Record<string, string>;
}

export interface MockRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** `/v1/render/jobs/{id}`: a `{name}` segment matches one path segment. */
  path: string;
  summary: string;
  handle(request: MockRequest): MockResponse | Promise<MockResponse>;
}

/** The error body every endpoint answers with: `{ error: { code, message, field? } }`. */
export function fail(status: number, code: string, message: string, field?: string): MockResponse {
  return { status, body: { error: { code, message, ...(field ? { field } : {}) } } };
}

/** Thrown by a handler to answer an error; the server turns it into the response. */
export class Rejection extends Error {
  constructor(readonly response: MockResponse) {
    super((response.body as { error: { message: string } }).error.message);
  }
}

export const reject = (status: number, code: string, message: string, field?: string) =>
  new Rejection(fail(status, code, message, field));

export const json = (status: number, body: unknown): MockResponse => ({ status, body });

/** A 201/202 answer with a `Location` header: where to GET (poll) what was created. */
export const created = (status: number, location: string, body: unknown): MockResponse => ({
  status,
  body,
  headers: { location },
});

/** The params of `path` if it matches `pattern` (`{x}` and `*` match one segment), else undefined. */
export function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const g = got[i]!;
    if (w === '*') continue;
    if (w.startsWith('{') && w.endsWith('}')) {
      if (g === '') return undefined;
      params[w.slice(1, -1)] = decodeURIComponent(g);
    } else if (w !== g) return undefined;
  }
  return params;
}

/** The body as a plain object (`{}` when there is none); anything else is a 400. */
export function objectBody(request: MockRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw reject(400, 'invalid_body', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** An optional string field, at most `max` characters. */
export function optionalString(body: Record<string, unknown>, field: string, max = 10_000): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw reject(422, 'invalid_field', `${field} must be a string`, field);
  if (value.length > max) throw reject(422, 'invalid_field', `${field} must be at most ${max} characters`, field);
  return value;
}
