import { dirname, resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import { createEngine, type Engine } from '../engine.js';
import type { RunledgerOptions } from '../config.js';
import { loadSecretKey } from '../workflows/secrets.js';
import { storedWorkflows, type WorkflowService } from '../workflows/service.js';
import { Channels } from '../chat/channels.js';
import { ChannelFeed } from '../chat/feed.js';
import { offlineProvider, type ChatProvider } from '../chat/providers.js';
import { startReplyWorker } from '../chat/reply.js';
import { createApp } from './app.js';
import { ChannelSockets } from './ws.js';
import { listen } from './listen.js';

export interface ServerOptions extends RunledgerOptions {
  host?: string;
  port?: number;
  token?: string | undefined;
  /** RUNLEDGER_SECRET_KEY; without it a key file in `dataDir` is used (created on first start). */
  secretKey?: string | undefined;
  /** Where the key file lives; default: the SQLite file's folder, else the working directory. */
  dataDir?: string;
  /** Hosts and CIDRs `http_request` steps may reach although they are private (RUNLEDGER_HTTP_ALLOW). */
  allow?: string[];
  /** Run executions and AI replies in this process too (default true). */
  workers?: boolean;
  /** The model that answers `role: user` chat messages; default the offline one. */
  chatProvider?: ChatProvider;
  logger?: Logger;
}

export interface Server {
  url: string;
  engine: Engine;
  workflows: WorkflowService;
  channels: Channels;
  close(): Promise<void>;
}

/**
 * The product in one process: the engine on its database, stored workflows with their workers,
 * and the HTTP API on `host:port`.
 *
 * @example const server = await startServer({ database: 'runledger.db', port: 8080 });
 */
export async function startServer(options: ServerOptions = {}): Promise<Server> {
  const { host = '127.0.0.1', port = 8080, token, secretKey, allow = [], workers = true, logger = pino(), chatProvider = offlineProvider(), ...engineOptions } = options;
  const database = engineOptions.database ?? 'runledger.db';
  const dataDir = options.dataDir ?? (/^postgres(ql)?:\/\//.test(database) ? process.cwd() : dirname(resolve(database)));
  const key = await loadSecretKey({ dataDir, ...(secretKey ? { env: secretKey } : {}) });
  const engine = await createEngine({ ...engineOptions, database, workers });
  try {
    const workflows = storedWorkflows(engine, { secretKey: key, allow, log: ({ level, message, ...ids }) => logger[level](ids, message) });
    const channels = new Channels(engine.store, engine.journal);
    const feed = await ChannelFeed.open(engine.store, channels);
    const sockets = new ChannelSockets({ channels, feed, token });
    if (workers) await startReplyWorker(engine, channels, chatProvider, { onDelta: sockets.delta, onError: (error) => logger.warn({ err: error }, 'chat reply failed') });
    const app = createApp({ engine, workflows, channels, ...(token ? { token } : {}) });
    const listening = await listen(app, { host, port, token, upgrade: sockets.upgrade });
    return {
      url: listening.url,
      engine,
      workflows,
      channels,
      close: async () => {
        sockets.close();
        await listening.close();
        await feed.close();
        await engine.close();
      },
    };
  } catch (error) {
    await engine.close();
    throw error;
  }
}
