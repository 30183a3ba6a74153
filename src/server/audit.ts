import type { IncomingMessage } from 'node:http';
import type { Context, Next } from 'hono';
import type { EngineEvents } from '../observe/events.js';
import type { AuditTrail, NewAuditEntry } from '../runtime/operate/audit.js';
import type { Actor } from './auth/actor.js';
import type { Route } from './route.js';

/** The most characters an audit row keeps of a path, a target or a detail. */
const MAX_TEXT = 200;
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A request the audit trail records: every one that may change state, but health checks and callbacks (their URL's token is their check). */
export const isPrivileged = (method: string, path: string): boolean =>
  !READS.has(method) && path !== '/healthz' && !path.startsWith('/callbacks/');

/**
 * Routes of the data plane: a worker's claims and heartbeats, events and messages flowing in, runs and tasks started,
 * a remote agent's reports. Thousands a second, each already in the journal of what it touched: the trail keeps only
 * their refusals (401, 403), so it stays a record of who did what to the installation, not a second journal.
 */
const DATA_PLANE = new Set([
  'POST /queues/{queue}/claim',
  'POST /queues/{queue}/tasks',
  'POST /tasks/complete',
  'POST /tasks/{id}/complete',
  'POST /tasks/{id}/fail',
  'POST /tasks/{id}/heartbeat',
  'POST /events',
  'POST /channels/{channel_id}/messages',
  'POST /agent/events',
  'POST /runs',
  'POST /runs/{id}/signal',
  'POST /workflows/{id}/execute',
  'POST /functions/{name}/runs',
  'POST /sessions',
  'POST /sessions/{id}/nodes',
  'POST /sessions/{id}/nodes/{seq}/end',
  'POST /sessions/{id}/progress',
  'POST /sessions/{id}/report',
  'POST /sessions/{id}/checkpoints',
  'POST /sessions/{id}/tool-calls',
  'POST /sessions/{id}/tool-calls/{call}/result',
]);

/**
 * The middleware that writes one audit row per privileged request (see `isPrivileged`; of the data plane, only the
 * refused ones), refused ones too (401, 403, 400, 409 …): who (the API key the bearer check put on the context), the route's OpenAPI path and target id, the
 * remote address and the HTTP status. It runs around everything after it, so a handler that throws is recorded with
 * the status its error maps to (500 when it escapes). It never reads the request body: a secret's value cannot reach
 * the trail; a refused request's `detail` is its error code and message with every quoted value blanked. A failed
 * write of the row is reported as `engine:error` and does not change the answer (the action it records is done).
 *
 * @example app.use('*', auditRequests(engine.audit, engine.observe.events, routes));
 */
export function auditRequests(trail: AuditTrail, events: EngineEvents, routes: Array<Pick<Route, 'method' | 'path'>>) {
  const match = routeMatcher(routes);
  return async (c: Context, next: Next) => {
    const method = c.req.method;
    if (!isPrivileged(method, c.req.path)) return next();
    let outcome = 500;
    try {
      await next();
      outcome = c.res.status;
    } finally {
      await record(c, trail, events, match, outcome);
    }
  };
}

/** Writes the row of a request that ended with `outcome` (a data-plane one only when refused). */
async function record(c: Context, trail: AuditTrail, events: EngineEvents, match: Matcher, outcome: number) {
  const method = c.req.method;
  const actor = c.get('actor') as Actor | undefined;
  const { route, target } = match(method, c.req.path);
  if (DATA_PLANE.has(`${method} ${route}`) && outcome !== 401 && outcome !== 403) return;
  const entry: NewAuditEntry = {
    actor: actor?.key ?? null,
    issuedTo: actor?.issuedTo ?? null,
    method,
    route,
    target,
    address: remoteAddress(c),
    outcome,
    detail: outcome >= 400 ? await refusal(c.res) : null,
  };
  await trail.append(entry).catch((error) => events.emit('engine:error', { what: 'audit', error }));
}

type Matcher = ReturnType<typeof routeMatcher>;

/** The route's OpenAPI path and first path parameter for a request; its own path (cut short) when no route has it. */
function routeMatcher(routes: Array<Pick<Route, 'method' | 'path'>>) {
  const patterns = routes.map((r) => ({
    method: r.method.toUpperCase(),
    path: r.path,
    pattern: new RegExp(`^${r.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '([^/]+)')}/?$`),
  }));
  return (method: string, path: string): { route: string; target: string | null } => {
    for (const p of patterns) {
      if (p.method !== method) continue;
      const found = p.pattern.exec(path);
      if (!found) continue;
      return { route: p.path, target: found[1] === undefined ? null : cut(decoded(found[1])) };
    }
    return { route: cut(path), target: null };
  };
}

/** The socket's remote address (behind a proxy: the proxy's; a forwarded header is the client's word, not recorded). */
function remoteAddress(c: Context): string | null {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming?.socket?.remoteAddress ?? null;
}

/** `code: message` of a JSON error answer, quoted values blanked (a message may quote the input it refused). */
async function refusal(res: Response): Promise<string | null> {
  try {
    if (!res.headers.get('content-type')?.includes('json')) return null;
    const body = (await res.clone().json()) as { error?: { code?: unknown; message?: unknown } };
    const code = typeof body.error?.code === 'string' ? body.error.code : 'error';
    const message = typeof body.error?.message === 'string' ? body.error.message : '';
    return cut(`${code}: ${blankQuoted(message)}`);
  } catch {
    return null;
  }
}

/** `'a secret'` → `'…'`: text between matching quotes (', ", `) is input, not a reason. */
export const blankQuoted = (text: string): string => text.replace(/'[^']*'|"[^"]*"|`[^`]*`/g, (q) => `${q[0]}…${q[0]}`);

const cut = (text: string) => (text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text);

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
