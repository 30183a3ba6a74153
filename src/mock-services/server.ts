import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CallLog, MockCall } from './calls.js';
import type { Faults } from './faults.js';
import { fail, matchPath, Rejection, type MockRequest, type MockResponse, type MockRoute } from './http.js';
import type { IdempotencyKeys } from './idempotency.js';

const MAX_BODY = 2_000_000;

export interface Pipeline {
  services: MockRoute[];
  control: MockRoute[];
  faults: Faults;
  calls: CallLog;
  keys: IdempotencyKeys;
  /** Called with each logged call once it is answered (or dropped). */
  onCall?: (call: MockCall) => void;
  /** Real-time waits of `delay_ms` faults, cleared on close. */
  wait(ms: number): Promise<void>;
}

/**
 * One request through the services: route → log → fault rule → idempotency key → handler →
 * (delay, drop) → answer. Control endpoints skip the log, the faults and the keys.
 */
export async function serveRequest(pipeline: Pipeline, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://mock');
  const method = req.method ?? 'GET';
  const path = url.pathname;
  const raw = await readBody(req);
  if (raw === undefined) return send(res, fail(413, 'body_too_large', `the body must be at most ${MAX_BODY} bytes`));
  let body: unknown;
  try {
    body = raw.length > 0 ? JSON.parse(raw) : undefined;
  } catch (error) {
    return send(res, fail(400, 'invalid_json', `the body is not JSON: ${(error as Error).message}`));
  }
  const control = path === '/' || path.startsWith('/_');
  const found = find(control ? pipeline.control : pipeline.services, method, path);
  if (!found.route)
    return send(
      res,
      found.allowed.length
        ? fail(405, 'method_not_allowed', `${path} answers ${found.allowed.join(', ')}`)
        : fail(404, 'not_found', `no endpoint ${method} ${path}`),
    );
  const request: MockRequest = {
    method,
    path,
    params: found.params,
    query: url.searchParams,
    headers: req.headers,
    body,
  };
  if (control) return send(res, await invoke(found.route, request));

  const key = headerValue(req.headers['idempotency-key']);
  const call = pipeline.calls.start({ method, path, idempotency_key: key, body });
  const started = Date.now();
  const finish = (response: MockResponse | null) => {
    call.status = response?.status ?? null;
    call.dropped = response === null;
    call.ms = Date.now() - started;
    if (response) send(res, response);
    else res.socket?.destroy();
    pipeline.onCall?.({ ...call });
  };

  const fault = pipeline.faults.take(method, path, body);
  call.fault = fault?.id ?? null;
  if (fault?.status !== undefined) {
    if (fault.delay_ms) await pipeline.wait(fault.delay_ms);
    const headers: Record<string, string> =
      fault.retry_after !== undefined ? { 'retry-after': String(fault.retry_after) } : {};
    return finish({
      status: fault.status,
      headers,
      body: fault.body ?? { error: { code: 'injected_fault', message: `${fault.status} injected by ${fault.id}` } },
    });
  }
  if (fault?.job || fault?.callback_copies)
    request.jobFault = {
      ...(fault.job ? { kind: fault.job } : {}),
      ...(fault.error ? { error: fault.error } : {}),
      ...(fault.callback_copies ? { callbackCopies: fault.callback_copies } : {}),
    };
  if (fault?.cancel)
    request.cancelFault = {
      kind: fault.cancel,
      ...(fault.cancelling_polls !== undefined ? { polls: fault.cancelling_polls } : {}),
      ...(fault.cancelling_ms !== undefined ? { ms: fault.cancelling_ms } : {}),
    };

  let response: MockResponse;
  if (key !== null && key.length > 255)
    response = fail(400, 'invalid_idempotency_key', 'Idempotency-Key must be at most 255 characters');
  else if (key !== null && method === 'POST') {
    const result = await pipeline.keys.run(`${method} ${path}`, key, body, () => invoke(found.route!, request));
    response = result.response;
    call.replayed = result.replayed;
  } else response = await invoke(found.route, request);

  if (fault?.delay_ms) await pipeline.wait(fault.delay_ms);
  finish(fault?.drop ? null : response);
}

async function invoke(route: MockRoute, request: MockRequest): Promise<MockResponse> {
  try {
    return await route.handle(request);
  } catch (error) {
    if (error instanceof Rejection) return error.response;
    return fail(500, 'internal', (error as Error).message);
  }
}

function find(
  routes: MockRoute[],
  method: string,
  path: string,
): { route?: MockRoute; params: Record<string, string>; allowed: string[] } {
  const allowed: string[] = [];
  for (const route of routes) {
    const params = matchPath(route.path, path);
    if (!params) continue;
    if (route.method === method) return { route, params, allowed };
    allowed.push(route.method);
  }
  return { params: {}, allowed };
}

function headerValue(value: string | string[] | undefined): string | null {
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, response: MockResponse): void {
  if (res.destroyed) return;
  if (response.bytes) {
    res
      .writeHead(response.status, { 'content-length': String(response.bytes.length), ...response.headers })
      .end(response.bytes);
    return;
  }
  if (response.body === undefined) {
    res.writeHead(response.status, response.headers).end();
    return;
  }
  const text = JSON.stringify(response.body);
  res
    .writeHead(response.status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      ...response.headers,
    })
    .end(text);
}
