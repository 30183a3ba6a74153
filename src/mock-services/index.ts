import { randomInt } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { artifactRoutes } from './artifacts.js';
import type { CallbackDelivery } from './callbacks.js';
import { CallLog, type CallFilter, type MockCall } from './calls.js';
import { controlRoutes } from './control.js';
import { Faults, parseRules, type ActiveFault, type FaultRule } from './faults.js';
import { IdempotencyKeys } from './idempotency.js';
import { intakeRoutes } from './intake.js';
import { layoutRoutes } from './layout.js';
import { MockModel, modelControlRoutes, type ModelFault, type ModelRequestLog, type ModelSettings } from './model.js';
import { renderRoutes } from './render.js';
import { serveRequest } from './server.js';
import { createWorld } from './world.js';

export type {
  ActiveFault,
  CallbackDelivery,
  CallFilter,
  FaultRule,
  MockCall,
  ModelFault,
  ModelRequestLog,
  ModelSettings,
};
export { completeProposal, mockRequest, waitForStatus, type MockAnswer } from './client.js';

export interface MockServicesOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1 (loopback only). */
  host?: string;
  /** Time factor: 10 makes every delay ten times shorter. Default 1 (the brief's seconds). */
  speed?: number;
  /** Ids, delays and layouts follow from it. Default: a random seed (read it back from `seed`). */
  seed?: number;
  /** Called with each call to a service once it is answered (the CLI prints them). */
  onCall?: (call: MockCall) => void;
}

export interface MockEndpoint {
  method: string;
  path: string;
  summary: string;
}

export interface MockServices {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  port: number;
  seed: number;
  speed: number;
  /** The service endpoints (not the control ones). */
  endpoints: MockEndpoint[];
  /** The call log, oldest first; `{ method, path }` filter it (path may be a `{x}` pattern). */
  calls(filter?: CallFilter): MockCall[];
  /** The callbacks sent to `callback_url`s, with their attempts. */
  callbacks(): CallbackDelivery[];
  /** The active fault rules. */
  faults(): ActiveFault[];
  /** Replaces every fault rule (`[]` removes them all); throws on a bad rule, naming the field. */
  setFaults(rules: FaultRule[]): ActiveFault[];
  /** Adds fault rules after those active. */
  addFaults(rules: FaultRule[]): ActiveFault[];
  /** The OpenAI-compatible model at `POST /v1/chat/completions` (see MockModel): its settings, faults and requests. */
  model: Pick<MockModel, 'answer' | 'configure' | 'setFaults' | 'requests'>;
  /** Forgets resources, idempotency keys, faults, calls and callbacks; the seed starts over. */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts the three services of brief 004 as one HTTP server (plain `node:http`, no engine inside):
 * Content Intake (`/v1/intake/sessions`), Gestalt layout (`/v1/layout/proposals`) and Document
 * Formatter (`/v1/render/…`, `/v1/artifacts/…`), with delays like the brief's (normalization
 * ~1.5 s, layout ~4 s, rendering ~3 s; ±20 % by the seed; divided by `speed`).
 *
 * - **Idempotency-Key** on a POST (scoped to method + path): a repeat with the same body answers the
 *   first response (same id and status, header `Idempotent-Replayed: true`) and creates nothing;
 *   another body with the same key is a 422 `idempotency_key_reused`. Only 2xx answers are kept.
 * - **Cancel** of something that has ended answers 200 and changes nothing; **DELETE** of a missing
 *   session is a 404 (clients treat 404/409/410 on cleanup as done).
 * - **Callbacks**: a create (or a session) with `callback_url` (loopback only) gets its final view
 *   POSTed there when it ends, retried up to 4 attempts.
 * - **Faults** (`POST /_faults`, `setFaults`): rules `{ endpoint: "POST /v1/layout/proposals",
 *   match?, times? (default 1 | "always"), status?, retry_after?, body?, delay_ms?, drop?,
 *   job?: "fail" | "hang", error? }`; the first rule that matches a request applies (see
 *   `FaultRule` and docs/mock-services.md).
 * - **Control**: `GET /` (endpoints), `GET|POST|PUT|DELETE /_faults`, `GET|DELETE /_calls`,
 *   `GET /_callbacks`, `POST /_reset`, `GET|PUT|DELETE /_model` (the model's knobs and requests).
 * - **Model**: `POST /v1/chat/completions`, an OpenAI-compatible model streaming a deterministic answer slowly.
 *
 * @example
 * const mock = await startMockServices({ speed: 20, seed: 7 });
 * mock.addFaults([{ endpoint: 'POST /v1/layout/proposals', status: 503, times: 2 }]);
 * const res = await fetch(`${mock.url}/v1/intake/sessions`, { method: 'POST', body: JSON.stringify({ content: 'Hello' }) });
 * // … { session_id: 'sess-…', status: 'draft' }
 * mock.calls({ path: '/v1/layout/proposals' }); // [{ method, path, idempotency_key, status: 503, … }, …]
 * await mock.close();
 */
export async function startMockServices(options: MockServicesOptions = {}): Promise<MockServices> {
  const speed = options.speed ?? 1;
  if (!(Number.isFinite(speed) && speed > 0 && speed <= 10_000))
    throw new Error(`speed must be a number above 0 and at most 10000, got ${options.speed}`);
  const seed = options.seed ?? randomInt(0, 2 ** 31);
  if (!Number.isSafeInteger(seed)) throw new Error(`seed must be an integer, got ${options.seed}`);
  const world = createWorld(seed, speed);
  const faults = new Faults();
  const calls = new CallLog();
  const keys = new IdempotencyKeys();
  const waits = new Set<NodeJS.Timeout>();
  const services = [...intakeRoutes(world), ...layoutRoutes(world), ...renderRoutes(world), ...artifactRoutes(world)];
  const model = new MockModel();
  const endpoints = [
    ...services.map(({ method, path, summary }) => ({ method, path, summary })),
    { method: 'POST', path: '/v1/chat/completions', summary: 'an OpenAI-compatible model, streamed (docs/models.md)' },
  ];
  const reset = () => {
    model.reset();
    world.reset();
    faults.clear();
    calls.clear();
    keys.clear();
  };
  const control = [
    ...controlRoutes({ faults, calls, callbacks: world.callbacks, endpoints: () => endpoints, reset }),
    ...modelControlRoutes(model),
  ];
  const pipeline = {
    services,
    control,
    faults,
    calls,
    keys,
    ...(options.onCall ? { onCall: options.onCall } : {}),
    wait: (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => (waits.delete(timer), resolve()), ms);
        waits.add(timer);
      }),
  };
  const server = createServer((req, res) => {
    // the model streams, which the services' request → response pipeline does not
    if (req.method === 'POST' && req.url?.split('?')[0] === '/v1/chat/completions') {
      model.serve(req, res).catch(() => res.destroy());
      return;
    }
    serveRequest(pipeline, req, res).catch((error) => {
      if (!res.headersSent)
        res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { code: 'internal', message: String(error) } }));
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  world.url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const rules = (list: FaultRule[]) => parseRules(list);
  return {
    url: world.url,
    port,
    seed,
    speed,
    endpoints,
    calls: (filter) => calls.list(filter),
    callbacks: () => world.callbacks.list(),
    faults: () => faults.list(),
    setFaults(list) {
      const parsed = rules(list);
      faults.clear();
      return faults.add(parsed);
    },
    addFaults: (list) => faults.add(rules(list)),
    model,
    reset,
    close: () =>
      new Promise<void>((resolve) => {
        reset();
        model.close();
        for (const timer of waits) clearTimeout(timer);
        waits.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
