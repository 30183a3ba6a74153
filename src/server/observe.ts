import type { Context, Next } from 'hono';
import type { EngineEvents } from '../observe/events.js';
import { parseTraceparent, type Observe } from '../observe/trace.js';

/**
 * Reports every request (`http:request`, by route template) and, when tracing is on, wraps it in
 * a server span that continues the caller's `traceparent`. Handlers then see the span's own
 * `traceparent` in the request headers, so a run they start joins this request's trace.
 */
export function observeRequests(observe: Observe) {
  return async (c: Context, next: Next) => {
    const events: EngineEvents = observe.events;
    const tracer = observe.tracer;
    const started = performance.now();
    const span = tracer?.start(`${c.req.method} request`, {
      kind: 'server',
      parent: parseTraceparent(c.req.header('traceparent')),
      attributes: { 'http.request.method': c.req.method },
    });
    if (span) c.set(TRACEPARENT_KEY as never, span.traceparent as never);
    let status = 500;
    try {
      await next();
      status = c.res.status;
    } finally {
      const route =
        status === 404 && c.req.routePath === '/*' ? 'unmatched' : c.req.routePath.replace(/:(\w+)/g, '{$1}');
      span?.end(status >= 500 ? `status ${status}` : undefined, {
        'http.route': route,
        'http.response.status_code': status,
      });
      events.emit('http:request', { method: c.req.method, route, status, durationMs: performance.now() - started });
    }
  };
}

const TRACEPARENT_KEY = 'runledger.traceparent';

/** The request headers a route handler sees: with the server span's `traceparent` when there is one. */
export function handlerHeaders(c: Context): Headers {
  const traceparent = c.get(TRACEPARENT_KEY as never) as string | undefined;
  if (!traceparent) return c.req.raw.headers;
  const headers = new Headers(c.req.raw.headers);
  headers.set('traceparent', traceparent);
  return headers;
}
