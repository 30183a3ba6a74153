import { serve } from '@hono/node-server';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { ValidationError } from '../errors.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

export interface Listening {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Serves `app` on `host:port` (port 0 picks a free one). A non-loopback address needs a token:
 * an open API on the network would let anyone run requests from this machine.
 */
export async function listen(
  app: { fetch: (request: Request) => Response | Promise<Response> },
  options: { host: string; port: number; token?: string | undefined; upgrade?: (request: IncomingMessage, socket: Duplex, head: Buffer) => void },
): Promise<Listening> {
  if (!LOOPBACK.test(options.host) && !options.token) {
    throw new ValidationError('host', `refusing to listen on ${options.host} without a token: set RUNLEDGER_TOKEN, or listen on 127.0.0.1`);
  }
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: options.host, port: options.port }, () => resolve(s));
    s.once('error', reject);
  });
  if (options.upgrade) server.on('upgrade', options.upgrade);
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
