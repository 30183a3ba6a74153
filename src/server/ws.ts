import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { timingSafeEqual } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Channels } from '../chat/channels.js';
import type { ChannelFeed } from '../chat/feed.js';
import { checkChannelId, type Message } from '../chat/message.js';
import type { ReplyDelta } from '../chat/reply.js';
import { ValidationError } from '../errors.js';
import { errorResponse, HttpError } from './errors.js';
import { checkUpgrade } from './origin.js';
import { type Gate, refusal } from './auth/access.js';
import type { Actor } from './auth/actor.js';
import { accessOf } from './auth/permissions.js';

const PATH = /^\/channels\/([^/]+)\/ws$/;
/** Posts of one socket read and waiting for the store; more wait unread in the client's buffers. */
const MAX_QUEUED_POSTS = 16;

export interface SocketOptions {
  channels: Channels;
  feed: ChannelFeed;
  token?: string | undefined;
  /** The server's keys (`createGate`): when keys are on, a socket needs one, as a header or `?token=`. Wins over `token`. */
  gate?: Gate | undefined;
  /** Without a token: origins besides the server's own whose pages may open a socket (see `checkUpgrade`). */
  allowedOrigins?: readonly string[] | undefined;
  /** Sending to a client pauses while its unsent frames pass this; default 1 MiB. */
  maxBufferedBytes?: number;
  /** A client that stays paused this long is cut off (close 1013) and reconnects with `after`; default 10 s. */
  stallMs?: number;
  /** Ping period; a client that misses a pong is dropped. Default 30 s. */
  pingMs?: number;
}

/**
 * WebSocket delivery of channels: `GET /channels/{id}/ws?after=<seq>` sends every message after
 * `seq`, then each new one (`{ type: 'message', message }`), at the pace the client reads (sending
 * pauses while its buffer is full; one stalled for `stallMs` is cut off), and reply deltas as they are generated
 * (`{ type: 'delta', … }`, transient). A client may post (`{ type: 'post', message: {…} }`, same
 * idempotency as the REST route); the answer is `{ type: 'posted', created, message }` or
 * `{ type: 'error', error }`.
 */
export class ChannelSockets {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: 256 * 1024 });
  private readonly sockets = new Map<string, Set<WebSocket>>();
  private readonly alive = new WeakSet<WebSocket>();
  private readonly pinger: NodeJS.Timeout;

  constructor(private readonly options: SocketOptions) {
    this.pinger = setInterval(() => this.ping(), options.pingMs ?? 30_000).unref();
    // with noServer nothing emits it today; an 'error' nobody listens to would end the process
    this.server.on('error', () => {});
  }

  /** The `upgrade` handler of the HTTP server. */
  readonly upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    // Node's HTTP server drops its own error listener when it hands the socket over: a client that
    // resets while we answer (a refusal, the 101) would otherwise throw ECONNRESET out of the process
    socket.on('error', () => socket.destroy());
    const url = new URL(request.url ?? '/', 'http://local');
    const match = PATH.exec(url.pathname);
    if (!match) {
      refuse(socket, 404, { error: { code: 'not_found', message: `no WebSocket route for ${url.pathname}` } });
      return;
    }
    this.open(request, socket, head, url, match[1]!).catch((error) => {
      const { status, body, headers } = errorResponse(error);
      refuse(socket, status, body, headers);
    });
  };

  private async open(request: IncomingMessage, socket: Duplex, head: Buffer, url: URL, segment: string): Promise<void> {
    // bad input is told before the key is looked up: a 400 needs no database, even while it is down
    const channelId = checkChannelId(decodePathSegment('channel_id', segment));
    const after = Number(url.searchParams.get('after') ?? 0);
    if (!Number.isInteger(after) || after < 0)
      throw new ValidationError('after', `must be a whole number ≥ 0 (got '${url.searchParams.get('after')}')`);
    const route = '/channels/{channel_id}/ws';
    const actor = await authorizeUpgrade(request, url, this.options, route, 'a channel WebSocket');
    this.server.handleUpgrade(request, socket, head, (ws) => this.connected(ws, channelId, after, actor));
  }

  /** Sends a reply delta to this process's sockets of its channel. */
  readonly delta = (delta: ReplyDelta): void => {
    const frame = JSON.stringify({ type: 'delta', ...delta });
    for (const ws of this.sockets.get(delta.channel_id) ?? []) if (ws.bufferedAmount < this.maxBuffered) ws.send(frame);
  };

  close(): void {
    clearInterval(this.pinger);
    for (const set of this.sockets.values()) for (const ws of set) ws.terminate();
    this.sockets.clear();
    this.server.close();
  }

  private get maxBuffered(): number {
    return this.options.maxBufferedBytes ?? 1024 * 1024;
  }

  private connected(ws: WebSocket, channelId: string, after: number, actor: Actor | undefined): void {
    let set = this.sockets.get(channelId);
    if (!set) this.sockets.set(channelId, (set = new Set()));
    set.add(ws);
    this.alive.add(ws);
    ws.on('pong', () => this.alive.add(ws));
    let drain: NodeJS.Timeout | null = null;
    // full: check every 20 ms whether the client drained; cut it off if it stalls for stallMs
    const wait = () => {
      const since = Date.now();
      drain = setInterval(() => {
        if (ws.bufferedAmount <= this.maxBuffered / 2) {
          clearInterval(drain!);
          drain = null;
          following.resume();
        } else if (Date.now() - since > (this.options.stallMs ?? 10_000)) {
          clearInterval(drain!);
          following.stop();
          ws.close(1013, `too slow: reconnect with after=${following.delivered}`);
        }
      }, 20);
    };
    const send = (message: Message) => {
      ws.send(frameOf(message));
      if (ws.bufferedAmount <= this.maxBuffered) return true;
      wait();
      return false;
    };
    const following = this.options.feed.follow(channelId, after, send);
    // one at a time, in the order sent: two messages typed quickly keep their order in the channel
    let posting = Promise.resolve();
    let queued = 0;
    ws.on('message', (data) => {
      // a client posting faster than the store takes posts is read no further: the rest waits in TCP buffers, not
      // in our memory (unbounded, 2,000 frames of 60 KB behind a slow store held 243 MB)
      if (++queued >= MAX_QUEUED_POSTS) ws.pause();
      posting = posting
        .then(() => this.post(ws, channelId, data.toString(), actor))
        .catch(() => ws.close(1011, 'the post failed'))
        .finally(() => {
          if (--queued < MAX_QUEUED_POSTS && ws.isPaused) ws.resume();
        });
    });
    // a frame that breaks RFC 6455 (too big, bad opcode, unmasked, bad UTF-8 …): `ws` has already sent
    // the close frame with its code (1009, 1002, 1007); the peer gets a second to read it, then is cut off
    ws.on('error', () => setTimeout(() => ws.terminate(), 1_000).unref());
    ws.on('close', () => {
      if (drain) clearInterval(drain);
      following.stop();
      set.delete(ws);
      if (set.size === 0) this.sockets.delete(channelId);
    });
  }

  private async post(ws: WebSocket, channelId: string, text: string, actor: Actor | undefined): Promise<void> {
    try {
      const refused = refusal(actor, accessOf('post', '/channels/{channel_id}/messages'), 'a post');
      if (refused) throw refused;
      let frame: { type?: unknown; message?: unknown };
      try {
        frame = JSON.parse(text);
      } catch {
        throw new ValidationError('frame', 'is not valid JSON');
      }
      if (frame?.type !== 'post') throw new ValidationError('type', `must be 'post' (got ${shortly(frame?.type)})`);
      const { message, created } = await this.options.channels.post(channelId, frame.message as never);
      ws.send(JSON.stringify({ type: 'posted', created, message }));
    } catch (error) {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ type: 'error', ...errorResponse(error).body }));
    }
  }

  private ping(): void {
    for (const set of this.sockets.values()) {
      for (const ws of set) {
        if (!this.alive.has(ws)) ws.terminate();
        else {
          this.alive.delete(ws);
          ws.ping();
        }
      }
    }
  }
}

/** A client's value, named in an error: JSON.stringify of an array 5,000 deep overflows the stack, and a 64 KB string need not come back. */
function shortly(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (Array.isArray(value)) return 'an array';
  return value !== null && typeof value === 'object' ? 'an object' : String(value);
}

/** A message's frame, serialized once however many sockets it goes to. */
const frames = new WeakMap<Message, string>();
function frameOf(message: Message): string {
  let frame = frames.get(message);
  if (frame === undefined) frames.set(message, (frame = JSON.stringify({ type: 'message', message })));
  return frame;
}

/** How a server checks who opens a WebSocket: its keys (`gate`), else its one token, else the page's origin. */
export interface UpgradeAuth {
  gate?: Gate | undefined;
  token?: string | undefined;
  allowedOrigins?: readonly string[] | undefined;
}

/**
 * Who opens a socket at `route` (its OpenAPI-style path, for the role it needs): with keys on, the key's actor (a
 * header or `?token=`; 401/403 otherwise); with only a token, that token; without either, the same-origin check of
 * `checkUpgrade`. Undefined when no key is in use.
 */
export async function authorizeUpgrade(
  request: IncomingMessage,
  url: URL,
  auth: UpgradeAuth,
  route: string,
  what: string,
): Promise<Actor | undefined> {
  const gate = auth.gate;
  if (gate && (await gate.keys.enabled())) {
    const query = url.searchParams.get('token');
    const header = request.headers.authorization ?? (query === null ? undefined : `Bearer ${query}`);
    const actor = await gate.actorOf(header, request.socket.remoteAddress);
    const refused = refusal(actor, accessOf('get', route), what);
    if (refused) throw refused;
    return actor;
  }
  if (!gate && auth.token !== undefined) authorize(request, url, auth.token);
  else checkUpgrade(request, auth.allowedOrigins ?? []);
  return undefined;
}

/** Browsers cannot set headers on a WebSocket: the token may come as `?token=` too. */
function authorize(request: IncomingMessage, url: URL, token: string): void {
  const given = Buffer.from(
    request.headers.authorization ?? (url.searchParams.has('token') ? `Bearer ${url.searchParams.get('token')}` : ''),
  );
  const expected = Buffer.from(`Bearer ${token}`);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new HttpError(
      401,
      'unauthorized',
      'missing or wrong bearer token (Authorization: Bearer <token>, or ?token=)',
    );
}

/** A percent-encoded path segment; a malformed escape (`%E0%A4%A`, `%zz`) is a 400 naming `path`, not a URIError. */
export function decodePathSegment(path: string, segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ValidationError(path, 'has a malformed percent-escape (each % must start a %XX sequence of valid UTF-8)');
  }
}

export function refuse(socket: Duplex, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extra}connection: close\r\n\r\n${text}`,
  );
}
