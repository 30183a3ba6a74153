import { dirname, resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import type { Hono } from 'hono';
import type { Agent } from '../agents/agent.js';
import type { Tool } from '../agents/tools.js';
import { ChannelFeed } from '../chat/feed.js';
import { offlineProvider, type ChatProvider } from '../chat/providers.js';
import type { RunledgerOptions } from '../config.js';
import { createEngine, type Engine } from '../engine.js';
import type { Workflow } from '../runtime/workflow.js';
import { loadSecretKey } from '../workflows/secrets.js';
import { packageVersion } from '../version.js';
import { createApp } from './app.js';
import { createMetrics } from '../observe/metrics.js';
import type { Tracer } from '../observe/trace.js';
import type { RetentionPolicy } from '../retention/policy.js';
import { listen } from './listen.js';
import { startServices, type Services } from './services.js';
import { ChannelSockets } from './ws.js';

export interface ServerOptions extends RunledgerOptions {
  host?: string;
  port?: number;
  token?: string | undefined;
  /** RUNLEDGER_SECRET_KEY; without it a key file in `dataDir` is used (created on first start). */
  secretKey?: string | undefined;
  /** Where the key file lives; default: the SQLite file's folder, else the working directory. */
  dataDir?: string;
  /** Hosts and CIDRs `http_request` steps and HTTP agents may reach although they are private (RUNLEDGER_HTTP_ALLOW). */
  allow?: string[];
  /** Run executions, sessions, AI replies, routing and schedules in this process too (default true). */
  workers?: boolean;
  /** The model that answers `role: user` chat messages; default the offline one. */
  chatProvider?: ChatProvider;
  agents?: Agent[];
  /** The tools ledger agents call (`defineTool`). */
  tools?: Tool[];
  /** The agent of an inbound event that names none. Default `sample-agent`. */
  defaultAgent?: string;
  codeWorkflows?: Workflow[];
  logger?: Logger;
  /** Ages after which finished records are deleted (RUNLEDGER_RETENTION), by this process when it runs workers. */
  retention?: RetentionPolicy;
  /** Spans for requests, runs and steps (`startTracing`); the caller closes it after the server. */
  tracer?: Tracer;
}

export interface Server extends Omit<Services, 'stop'> {
  url: string;
  engine: Engine;
  close(): Promise<void>;
}

const isPostgres = (database: string) => /^postgres(ql)?:\/\//.test(database);

/** Where the secret key file lives: beside the SQLite file, else the working directory. */
export function dataDirFor(database: string): string {
  return isPostgres(database) ? process.cwd() : dirname(resolve(database));
}

/**
 * The product in one process: the engine on its database, every service with its workers, and
 * the HTTP API (REST, SSE, WebSocket) on `host:port`.
 *
 * @example const server = await startServer({ database: 'runledger.db', port: 8080 });
 */
export async function startServer(options: ServerOptions = {}): Promise<Server> {
  const { host = '127.0.0.1', port = 8080, token, secretKey, allow = [], workers = true, logger = pino(), chatProvider = offlineProvider(), agents, tools, defaultAgent, codeWorkflows, tracer, retention, ...engineOptions } = options;
  const database = engineOptions.database ?? 'runledger.db';
  const key = await loadSecretKey({ dataDir: options.dataDir ?? dataDirFor(database), ...(secretKey ? { env: secretKey } : {}) });
  const engine = await createEngine({ ...engineOptions, database, workers });
  const metrics = createMetrics(engine.events, engine.store);
  if (tracer) engine.useTracer(tracer);
  // the socket opens first: HTTP agents are told this server's address to report back to
  let app: Hono | null = null;
  let sockets: ChannelSockets | null = null;
  // like an outage's 503, it says when to come back: the services start within a second or two
  const starting = () => new Response(JSON.stringify({ error: { code: 'starting', message: 'the server is starting' } }), { status: 503, headers: { 'content-type': 'application/json', 'retry-after': '1' } });
  try {
    const listening = await listen(
      { fetch: (request) => (app ? app.fetch(request) : starting()) },
      { host, port, token, upgrade: (request, socket, head) => (sockets ? sockets.upgrade(request, socket, head) : socket.destroy()) },
    );
    try {
      const services = await startServices(engine, { secretKey: key, allow, logger, chatProvider, workers, reportBaseUrl: listening.url, onDelta: (delta) => sockets?.delta(delta), ...(retention ? { retention } : {}), ...(agents ? { agents } : {}), ...(tools ? { tools } : {}), ...(defaultAgent ? { defaultAgent } : {}), ...(codeWorkflows ? { codeWorkflows } : {}) });
      // SQLite wakes only the process that wrote: replies written by a `runledger worker` are found by a poll
      const feed = await ChannelFeed.open(engine.store, services.channels, isPostgres(database) ? {} : { pollMs: engine.config.pollMs });
      sockets = new ChannelSockets({ channels: services.channels, feed, token });
      app = createApp({ engine, ...services, metrics, version: packageVersion(), ...(token ? { token } : {}) });
      const { stop, ...rest } = services;
      return {
        ...rest,
        url: listening.url,
        engine,
        close: async () => {
          sockets?.close();
          await listening.close();
          await stop();
          await feed.close();
          metrics.close();
          await engine.close();
        },
      };
    } catch (error) {
      await listening.close();
      throw error;
    }
  } catch (error) {
    await engine.close();
    throw error;
  }
}
