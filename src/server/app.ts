import { Hono, type Context } from 'hono';
import type { AgentLedger } from '../agents/ledger.js';
import type { SessionService } from '../agents/service.js';
import type { Channels } from '../chat/channels.js';
import type { Engine } from '../engine.js';
import type { TriggerService } from '../triggers/service.js';
import { ValidationError } from '../errors.js';
import { checkText } from '../json.js';
import { zodProblems } from '../problems.js';
import type { WorkflowService } from '../workflows/service.js';
import { readJson } from './body.js';
import { errorResponse } from './errors.js';
import { authenticate, createGate, refusal, type Gate } from './auth/access.js';
import { accessOf } from './auth/permissions.js';
import type { KeyTable } from './auth/keys.js';
import { keyRoutes } from './routes/keys.js';
import { openapi } from './openapi.js';
import { checkHost, checkSameOrigin, sourceOf, STATE_CHANGING } from './origin.js';
import type { Metrics } from '../observe/metrics.js';
import { handlerHeaders, observeRequests } from './observe.js';
import type { Route } from './route.js';
import type { Actor } from './auth/actor.js';
import type { RemoteLedger } from '../agents/remote.js';
import { agentProtocolRoutes } from './routes/agent-protocol.js';
import { agentRoutes } from './routes/agents.js';
import { auditRoutes } from './routes/audit.js';
import { auditRequests } from './audit.js';
import { batchRoutes } from './routes/batches.js';
import { callbackRoutes } from './routes/callbacks.js';
import { channelRoutes } from './routes/channels.js';
import { controlRoutes } from './routes/control.js';
import { historyRoutes } from './routes/history.js';
import { replayRoutes } from './routes/replay.js';
import { operationRoutes } from './routes/operations.js';
import { operatorRoutes } from './routes/operator.js';
import { queueListRoutes } from './routes/queue-list.js';
import { ruleEditRoutes } from './routes/rule-edit.js';
import { scheduleBackfillRoutes } from './routes/schedule-backfill.js';
import { triggerPreviewRoutes } from './routes/trigger-previews.js';
import { queueRoutes } from './routes/queues.js';
import { devRoutes, type ModuleStatus } from './routes/dev.js';
import { overviewRoutes } from './routes/overview.js';
import { runDiffRoutes } from './routes/run-diff.js';
import { runRoutes } from './routes/runs.js';
import { runTextRoutes } from './routes/run-text.js';
import { sessionRoutes } from './routes/sessions.js';
import { templateRoutes } from './routes/templates.js';
import { functionRoutes } from './routes/functions.js';
import { flowRoutes } from './routes/flow.js';
import { limitRoutes } from './routes/limits.js';
import { notificationRoutes } from './routes/notifications.js';
import type { Notifications } from '../notifications/service.js';
import { triggerRoutes } from './routes/triggers.js';
import { workflowRoutes } from './routes/workflows.js';
import { mountUi, uiDir } from './ui.js';

export interface AppOptions {
  engine: Engine;
  workflows: WorkflowService;
  channels?: Channels;
  triggers?: TriggerService;
  sessions?: SessionService;
  ledger?: AgentLedger;
  /** The agent protocol's ledger writes (`assemble` makes it). */
  remote?: RemoteLedger;
  /** Outbound webhooks (`assemble` makes them). */
  notifications?: Notifications;
  /** The bootstrap admin key (RUNLEDGER_TOKEN): with it, or once an API key exists, every route but `/healthz` needs a key. */
  token?: string;
  /** The store's API key table (`openApp` hands it in); without it, only `token` authenticates and `/keys` is absent. */
  keys?: KeyTable;
  /** The keys and failed attempts, shared with the channel WebSocket (default: made from `keys` and `token`). */
  gate?: Gate;
  /**
   * Origins besides the server's own whose pages may change state (and, without a token, names
   * the server answers to besides loopback ones): see `checkSameOrigin`. Validated origins only.
   */
  allowedOrigins?: readonly string[];
  version?: string;
  /** The built dashboard served at `/ui` (default: `dist/ui` when built; null: none). */
  uiDir?: string | null;
  /** Serves `GET /metrics` (behind the same token as the API). */
  metrics?: Metrics;
  /** `runledger dev`'s modules, for `GET /dev/status` (default: none). */
  devStatus?: () => ModuleStatus[];
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
  const gate = options.gate ?? createGate(options.keys, { token: options.token, events: options.engine.events });
  const routes: Route[] = [
    // first: its GET /events/stream must match before GET /events/{id}
    ...runRoutes(options.engine, { workflows: options.workflows.definitions }),
    ...runTextRoutes(options.engine),
    ...runDiffRoutes(options.engine, options.workflows.definitions),
    ...controlRoutes(options.engine),
    ...workflowRoutes(options.workflows),
    ...batchRoutes(options.workflows),
    ...templateRoutes(options.workflows),
    ...functionRoutes(options.workflows.functions),
    ...limitRoutes(options.engine),
    ...flowRoutes(options.engine),
    ...callbackRoutes(options.workflows.callbacks),
    ...operationRoutes(options.engine, options.workflows.secrets),
    ...(options.channels ? channelRoutes(options.engine, options.channels) : []),
    ...(options.triggers ? triggerRoutes(options.triggers) : []),
    ...(options.triggers ? triggerPreviewRoutes(options.triggers) : []),
    ...(options.triggers ? scheduleBackfillRoutes(options.triggers) : []),
    ...(options.triggers ? ruleEditRoutes(options.triggers) : []),
    ...(options.sessions ? sessionRoutes(options.sessions) : []),
    ...historyRoutes(options.engine, options.workflows.definitions),
    ...replayRoutes(options.engine),
    ...overviewRoutes(options.engine),
    ...operatorRoutes(options.engine, options.workflows.definitions),
    ...queueListRoutes(options.engine),
    ...(options.ledger ? agentRoutes(options.ledger) : []),
    ...(options.remote ? agentProtocolRoutes(options.remote) : []),
    ...(options.notifications ? notificationRoutes(options.notifications) : []),
    ...queueRoutes(options.engine, app),
    ...devRoutes(options.devStatus ?? (() => [])),
    ...auditRoutes(options.engine.audit),
    ...(options.keys || options.gate ? keyRoutes(gate.keys) : []),
  ];
  const document = openapi(routes, options.version ?? '0.0.0');

  app.use('*', observeRequests(options.engine.observe));
  // an answer is never sniffed as another type: a JSON error quoting input is not HTML to any browser
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('x-content-type-options', 'nosniff');
  });
  // around the origin and bearer checks below: a refused request is recorded too
  app.use('*', auditRequests(options.engine.audit, options.engine.observe.events, routes));
  const allowed = allowedMethods([
    ...routes,
    { method: 'get', path: '/healthz' },
    { method: 'get', path: '/openapi.json' },
  ]);
  app.notFound((c) => {
    const allow = allowed(c.req.path);
    if (allow.length > 0) {
      return c.json(
        {
          error: {
            code: 'method_not_allowed',
            message: `${c.req.method} is not allowed on ${c.req.path} (allowed: ${allow.join(', ')})`,
          },
        },
        405,
        { allow: allow.join(', ') },
      );
    }
    return c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404);
  });
  // without keys, only a web page's origin tells a browser's request from a local process's; a key
  // authenticates every request but /healthz and /callbacks, and no page of another origin has it
  const open = sameOrigin(options.allowedOrigins ?? []);
  app.use('*', async (c, next) => ((await gate.keys.enabled()) ? next() : open(c, next)));
  // a read of the journal's head (one index probe), not status(): its counts grow with history and health checks poll
  app.get(
    '/healthz',
    async (c) => (
      await options.engine.journal.head(), c.json({ status: 'ok', store: options.engine.operator.dialect() })
    ),
  );
  // before the bearer check: the dashboard's files hold no data; it asks for the token on a 401
  mountUi(app, options.uiDir === undefined ? uiDir() : options.uiDir);
  app.use(
    '*',
    authenticate(gate, (path) => path === '/healthz' || isCallback(path)),
  );
  app.get('/openapi.json', (c) => c.json(document));
  const metrics = options.metrics;
  if (metrics)
    app.get(
      '/metrics',
      async () => new Response(await metrics.text(), { headers: { 'content-type': metrics.contentType } }),
    );
  mount(app, routes);
  return app;
}

/** Adds `routes` to `app`, each validating its body and query with its schemas; errors become JSON with their status. */
export function mount(app: Hono, routes: Route[]): Hono {
  for (const r of routes) app.on(r.method.toUpperCase(), r.path.replace(/\{(\w+)\}/g, ':$1'), (c) => serve(r, c));
  app.onError((error, c) => {
    const { status, body, headers } = errorResponse(error);
    return c.json(body, status as 400, headers);
  });
  return app;
}

async function serve(r: Route, c: Context): Promise<Response> {
  const refused = refusal(c.get('actor'), accessOf(r.method, r.path), `${r.method.toUpperCase()} ${r.path}`);
  if (refused) throw refused;
  const params = c.req.param() as Record<string, string>;
  for (const [name, value] of Object.entries(params)) checkText(name, value);
  // a callback's sender is another service, which may label its JSON as it likes: its URL's token is the check
  const body = r.body ? parse(r.body, await readJson(c.req.raw, { anyType: isCallback(c.req.path) }), '') : undefined;
  const query = r.query ? parse(r.query, checkedQuery(new URL(c.req.url).searchParams), 'query') : {};
  // made when a handler reads them: most do not, and each is a web object built from the Node request
  const request = {
    params,
    query,
    body,
    get headers() {
      return handlerHeaders(c);
    },
    get signal() {
      return c.req.raw.signal;
    },
    actor: c.get('actor') as Actor | undefined,
  };
  const result = await r.handle(request);
  if (result instanceof Response) return result;
  if (r.status === 204) return c.body(null, 204);
  return c.json(result ?? null, r.status as 200);
}

/** Query values as an object; one holding U+0000 or an unpaired surrogate is refused (see checkText). */
function checkedQuery(search: URLSearchParams): Record<string, string> {
  const query = Object.fromEntries(search);
  for (const [name, value] of Object.entries(query)) checkText(`query.${name}`, value);
  return query;
}

function parse(schema: NonNullable<Route['body']>, value: unknown, prefix: string): any {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw ValidationError.of(zodProblems(parsed.error, prefix));
  return parsed.data;
}

/** The methods some route answers on a path (for a 405's `Allow`); none when no route has the path. */
function allowedMethods(routes: Array<Pick<Route, 'method' | 'path'>>): (path: string) => string[] {
  const patterns = routes.map((r) => ({
    method: r.method.toUpperCase(),
    pattern: new RegExp(`^${r.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '[^/]+')}/?$`),
  }));
  return (path) => {
    const methods = new Set(patterns.filter((p) => p.pattern.test(path)).map((p) => p.method));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  };
}

/** A callback URL carries its own unguessable token: the service that POSTs to it has no bearer token, and no page knows the URL. */
const isCallback = (path: string) => path.startsWith('/callbacks/');

function sameOrigin(allowedOrigins: readonly string[]) {
  return async (c: Context, next: () => Promise<void>) => {
    const source = sourceOf(c.req.raw);
    checkHost(source.host, allowedOrigins);
    if (STATE_CHANGING.has(c.req.method) && !isCallback(c.req.path))
      checkSameOrigin(source, allowedOrigins, c.req.method);
    return next();
  };
}
