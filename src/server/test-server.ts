import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import type { Backend } from '../testing/backends.js';
import { startServer, type Server, type ServerOptions } from './start.js';

/** A route test's server on a fresh database of `backend`, and a JSON call to it. */
export interface TestServer {
  readonly server: Server;
  /** The answer's status and parsed body (null when empty). */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

/**
 * Registers the hooks that start a silent server on a fresh database (no workers unless `options` says, a temporary
 * data folder) in the describe block it is called in, and close it after.
 *
 * @example const { call } = useServer(backend); it('…', async () => expect((await call('GET', '/limits')).status).toBe(200));
 */
export function useServer(backend: Backend, options: ServerOptions = {}): TestServer {
  let server: Server | undefined;
  beforeAll(async () => {
    server = await startServer({
      database: await backend.create(),
      port: 0,
      workers: false,
      pollMs: 1000,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-server-')),
      logger: pino({ level: 'silent' }),
      ...options,
    });
  });
  afterAll(() => server?.close());
  const up = () => {
    if (!server) throw new Error('the server is not started yet: use it inside a test');
    return server;
  };
  return {
    get server() {
      return up();
    },
    async call(method, path, body) {
      const response = await fetch(`${up().url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : null };
    },
  };
}
