import { timingSafeEqual } from 'node:crypto';
import { Hono, type Context } from 'hono';
import type { SessionService } from '../agents/service.js';
import type { Channels } from '../chat/channels.js';
import type { Engine } from '../engine.js';
import type { TriggerService } from '../triggers/service.js';
import { ValidationError } from '../errors.js';
import { zodProblems } from '../workflows/schema.js';
import type { WorkflowService } from '../workflows/service.js';
import { readJson } from './body.js';
import { errorResponse, HttpError } from './errors.js';
import { openapi } from './openapi.js';
import type { Route } from './route.js';
import { channelRoutes } from './routes/channels.js';
import { operationRoutes } from './routes/operations.js';
import { runRoutes } from './routes/runs.js';
import { sessionRoutes } from './routes/sessions.js';
import { triggerRoutes } from './routes/triggers.js';
import { workflowRoutes } from './routes/workflows.js';

export interface AppOptions {
  engine: Engine;
  workflows: WorkflowService;
  channels?: Channels;
  triggers?: TriggerService;
  sessions?: SessionService;
  /** When set, every route but `/healthz` needs `Authorization: Bearer <token>`. */
  token?: string;
  version?: string;
}

/**
 * The HTTP API as a fetch-style handler (`app.fetch(request)`): routes run in process in tests,
 * and `listen()` serves it on a socket.
 *
 * @example
 * const app = createApp({ engine, workflows: storedWorkflows(engine, { secretKey }) });
 * const res = await app.fetch(new Request('http://local/workflows'));
 */
export function createApp(options: AppOptions): Hono {
  const app = new Hono();
  const routes: Route[] = [
    // first: its GET /events/stream must match before GET /events/{id}
    ...runRoutes(options.engine),
    ...workflowRoutes(options.workflows),
    ...operationRoutes(options.engine, options.workflows.secrets),
    ...(options.channels ? channelRoutes(options.engine, options.channels) : []),
    ...(options.triggers ? triggerRoutes(options.triggers) : []),
    ...(options.sessions ? sessionRoutes(options.sessions) : []),
  ];
  const document = openapi(routes, options.version ?? '0.0.0');

  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));
  // a read of the journal's head (one index probe), not status(): its counts grow with history and health checks poll
  app.get('/healthz', async (c) => (await options.engine.store.eventHead(), c.json({ status: 'ok', store: options.engine.store.dialect })));
  if (options.token !== undefined) app.use('*', bearer(options.token));
  app.get('/openapi.json', (c) => c.json(document));
  mount(app, routes);
  return app;
}

/** Adds `routes` to `app`, each validating its body and query with its schemas; errors become JSON with their status. */
export function mount(app: Hono, routes: Route[]): Hono {
  for (const r of routes) app.on(r.method.toUpperCase(), r.path.replace(/\{(\w+)\}/g, ':$1'), (c) => serve(r, c));
  app.onError((error, c) => {
    const { status, body } = errorResponse(error);
    return c.json(body, status as 400);
  });
  return app;
}

async function serve(r: Route, c: Context): Promise<Response> {
  const body = r.body ? parse(r.body, await readJson(c.req.raw), '') : undefined;
  const query = r.query ? parse(r.query, Object.fromEntries(new URL(c.req.url).searchParams), 'query') : {};
  const result = await r.handle({ params: c.req.param() as Record<string, string>, query, body, headers: c.req.raw.headers, signal: c.req.raw.signal });
  if (result instanceof Response) return result;
  if (r.status === 204) return c.body(null, 204);
  return c.json(result ?? null, r.status as 200);
}

function parse(schema: NonNullable<Route['body']>, value: unknown, prefix: string): any {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw ValidationError.of(zodProblems(parsed.error, prefix));
  return parsed.data;
}

function bearer(token: string) {
  const expected = Buffer.from(`Bearer ${token}`);
  return async (c: Context, next: () => Promise<void>) => {
    if (c.req.path === '/healthz') return next();
    const given = Buffer.from(c.req.header('authorization') ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new HttpError(401, 'unauthorized', 'missing or wrong bearer token (Authorization: Bearer <RUNLEDGER_TOKEN>)');
    return next();
  };
}
