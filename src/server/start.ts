import type { Hono } from 'hono';
import { openApp, type OpenApp, type OpenAppOptions } from '../app/open.js';
import { ChannelFeed } from '../chat/feed.js';
import { packageVersion } from '../version.js';
import { createApp } from './app.js';
import { createGate } from './auth/access.js';
import { listen, type RequestTimeouts } from './listen.js';
import { originOf } from './origin.js';
import type { ModuleStatus } from './routes/dev.js';
import { RunSockets } from './run-sockets.js';
import { ChannelSockets } from './ws.js';

export interface ServerOptions extends OpenAppOptions, RequestTimeouts {
  host?: string;
  port?: number;
  token?: string | undefined;
  /** Origins besides its own whose pages may change state, when there is no token (RUNLEDGER_ALLOWED_ORIGINS, see `parseAllowedOrigins`); the public URL's origin is one too. */
  allowedOrigins?: readonly string[];
  /** `runledger dev`'s modules, for `GET /dev/status` (default: none). */
  devStatus?: () => ModuleStatus[];
}

export interface Server extends Omit<OpenApp, 'close' | 'metrics'> {
  url: string;
  close(): Promise<void>;
}

/**
 * The product in one process: the app (`openApp`: the engine on its database and every service
 * with its workers) behind the HTTP API (REST, SSE, WebSocket) on `host:port`.
 *
 * @example const server = await startServer({ database: 'runledger.db', port: 8080 });
 */
export async function startServer(options: ServerOptions = {}): Promise<Server> {
  const {
    host = '127.0.0.1',
    port = 8080,
    token,
    allowedOrigins = [],
    headersTimeoutMs,
    requestTimeoutMs,
    devStatus,
    ...appOptions
  } = options;
  const database = appOptions.database ?? 'runledger.db';
  // the socket opens first: HTTP agents are told this server's address to report back to
  let app: Hono | null = null;
  let sockets: ChannelSockets | null = null;
  let runSockets: RunSockets | null = null;
  // like an outage's 503, it says when to come back: the services start within a second or two
  const starting = () =>
    new Response(JSON.stringify({ error: { code: 'starting', message: 'the server is starting' } }), {
      status: 503,
      headers: { 'content-type': 'application/json', 'retry-after': '1' },
    });
  const listening = await listen(
    // the Node bindings (`env.incoming`) carry the socket: the audit trail records its remote address
    { fetch: (request, env) => (app ? app.fetch(request, env) : starting()) },
    {
      host,
      port,
      token,
      headersTimeoutMs,
      requestTimeoutMs,
      upgrade: (request, socket, head) => {
        const target = RunSockets.handles(new URL(request.url ?? '/', 'http://local').pathname) ? runSockets : sockets;
        return target ? target.upgrade(request, socket, head) : socket.destroy();
      },
    },
  );
  try {
    const opened = await openApp({
      ...appOptions,
      database,
      listeningUrl: listening.url,
      onDelta: (delta) => sockets?.delta(delta),
    });
    try {
      // SQLite wakes only the process that wrote: replies written by a `runledger worker` are found by a poll
      const feed = await ChannelFeed.open(
        opened.engine.journal,
        opened.channels,
        /^postgres(ql)?:\/\//.test(database) ? {} : { pollMs: opened.engine.config.pollMs },
      );
      // checked by openApp: the name the server is reached at from outside is its own
      const origins = [...allowedOrigins, ...(appOptions.publicUrl ? [originOf(appOptions.publicUrl)] : [])];
      // one door for REST, SSE and the WebSocket: the same keys, revocations and failed attempts
      const gate = createGate(opened.keys, { token, events: opened.engine.events });
      sockets = new ChannelSockets({ channels: opened.channels, feed, gate, allowedOrigins: origins });
      runSockets = new RunSockets(opened.engine, { gate, allowedOrigins: origins }, opened.engine.config.pollMs);
      const { close, metrics, ...rest } = opened;
      app = createApp({
        ...rest,
        metrics,
        version: packageVersion(),
        allowedOrigins: origins,
        gate,
        ...(token ? { token } : {}),
        ...(devStatus ? { devStatus } : {}),
      });
      return {
        ...rest,
        url: listening.url,
        close: async () => {
          sockets?.close();
          runSockets?.close();
          await listening.close();
          await feed.close();
          await close();
        },
      };
    } catch (error) {
      await opened.close();
      throw error;
    }
  } catch (error) {
    await listening.close();
    throw error;
  }
}
