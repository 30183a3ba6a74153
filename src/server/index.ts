/**
 * The product as a server (`runledger/server`): the HTTP API on a socket (`startServer`), the same
 * app as a fetch handler for tests and other hosts (`createApp`), and the product without HTTP
 * (`openApp`, `assemble`), as `runledger serve` and `runledger worker` run them.
 *
 * @example
 * import { startServer } from 'runledger/server';
 * const server = await startServer({ database: 'runledger.db', port: 8080 });
 */
export { startServer, type Server, type ServerOptions } from './start.js';
export { createApp, type AppOptions } from './app.js';
export { openApp, dataDirFor, type OpenApp, type OpenAppOptions } from '../app/open.js';
export { assemble, MANUAL_AGENT_RULE, type App, type AssembleOptions } from '../app/assemble.js';
export { offlineModel } from '../models/offline.js';
export { modelFromEnv } from '../models/env.js';
