import { serve } from '@hono/node-server';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { RunledgerError, ValidationError } from '../errors.js';

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/**
 * How long a client may take to send a request: its headers, and the whole of it with its body.
 * Node's own bounds are 60 s and 300 s, long enough for a few hundred slow clients to hold every
 * socket, also on `/callbacks/*`, which needs no token. They bound receiving only: an SSE stream, a
 * long-poll or a WebSocket answers for as long as it likes once its request is in.
 */
export interface RequestTimeouts {
  headersTimeoutMs?: number | undefined;
  requestTimeoutMs?: number | undefined;
}

export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Node checks the bounds above on a timer (30 s by default): each second keeps a bound within a second of its number. */
const CHECK_EVERY_MS = 1_000;

/** Another process listens on the host and port asked for (a server left running, most often). */
export class AddressInUseError extends RunledgerError {
  override readonly code = 'address_in_use';
  override name = 'AddressInUseError';
}

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
  /** `env` carries Node's request (`env.incoming`): the client's address is read from it. */
  app: { fetch: (request: Request, env?: unknown) => Response | Promise<Response> },
  options: {
    host: string;
    port: number;
    token?: string | undefined;
    upgrade?: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
  } & RequestTimeouts,
): Promise<Listening> {
  if (!LOOPBACK.test(options.host) && !options.token) {
    throw new ValidationError(
      'host',
      `refusing to listen on ${options.host} without a token: set RUNLEDGER_TOKEN, or listen on 127.0.0.1`,
    );
  }
  const headersTimeout = options.headersTimeoutMs ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  for (const [field, value] of [
    ['headersTimeoutMs', headersTimeout],
    ['requestTimeoutMs', requestTimeout],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1)
      throw new ValidationError(field, `must be a whole number of milliseconds, at least 1 (got ${value})`);
  }
  if (headersTimeout > requestTimeout)
    throw new ValidationError(
      'headersTimeoutMs',
      `must not be longer than requestTimeoutMs (RUNLEDGER_HEADERS_TIMEOUT_MS ${headersTimeout} > RUNLEDGER_REQUEST_TIMEOUT_MS ${requestTimeout}), which includes the headers`,
    );
  // an idle kept-alive socket is not bound by headersTimeout (its clock starts at a request's first byte), only by keepAliveTimeout: Node's 5 s stays
  const serverOptions = {
    headersTimeout,
    requestTimeout,
    connectionsCheckingInterval: Math.min(CHECK_EVERY_MS, headersTimeout),
  };
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, hostname: options.host, port: options.port, serverOptions }, () => resolve(s));
    s.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new AddressInUseError(
              `port ${options.port} is in use on ${options.host} — is another runledger running? use --port <n> (or PORT)`,
            )
          : error,
      ),
    );
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
