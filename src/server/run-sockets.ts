import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Engine } from '../engine.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { runStream } from '../runtime/pass/history.js';
import { FALLBACK_MS } from '../runtime/read/runs.js';
import { errorResponse } from './errors.js';
import { textMessage } from './routes/run-text.js';
import { authorizeUpgrade, decodePathSegment, refuse, type UpgradeAuth } from './ws.js';

const PATH = /^\/runs\/([^/]+)\/ws$/;
/** Sending pauses while a client's unsent frames pass this. */
const MAX_BUFFERED = 1024 * 1024;

/**
 * WebSocket delivery of a run's model text, for clients that hold a socket rather than an event stream:
 * `GET /runs/{id}/ws?after=<version>` sends what `GET /runs/{id}/stream` does, one JSON frame per message —
 * `{ type: 'text' | 'resumed' | 'generated' | 'end', id, …data }` (`end`'s `ended`: the run's last event), `id` the
 * event version to reconnect `after` — and
 * closes (1000) after `end`. Only journaled text is sent, so a client that reconnects after a crash of the server
 * reads every piece once. The client sends nothing; keys, token and origin are checked as for a channel's socket.
 */
export class RunSockets {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: 1024 });
  private readonly sockets = new Set<WebSocket>();

  constructor(
    private readonly engine: Engine,
    private readonly auth: UpgradeAuth,
    private readonly pollMs = FALLBACK_MS,
  ) {
    this.server.on('error', () => {});
  }

  /** Whether a request's path is a run's socket. */
  static handles(path: string): boolean {
    return PATH.test(path);
  }

  readonly upgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    const url = new URL(request.url ?? '/', 'http://local');
    this.open(request, socket, head, url).catch((error) => {
      const { status, body, headers } = errorResponse(error);
      refuse(socket, status, body, headers);
    });
  };

  close(): void {
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
    this.server.close();
  }

  private async open(request: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Promise<void> {
    // bad input is told before the key is looked up: a 400 needs no database
    const id = decodePathSegment('id', PATH.exec(url.pathname)![1]!);
    const after = Number(url.searchParams.get('after') ?? 0);
    if (!Number.isInteger(after) || after < 0)
      throw new ValidationError('after', `must be a whole number ≥ 0 (got '${url.searchParams.get('after')}')`);
    await authorizeUpgrade(request, url, this.auth, '/runs/{id}/ws', "a run's WebSocket");
    if (!(await this.engine.runs.find(id))) throw new NotFoundError(`run ${id} not found`);
    this.server.handleUpgrade(request, socket, head, (ws) => {
      this.sockets.add(ws);
      ws.on('error', () => ws.terminate());
      this.follow(ws, id, after)
        .catch(() => ws.close(1011, `the store failed: reconnect with after`))
        .finally(() => this.sockets.delete(ws));
    });
  }

  /** Sends the run's text messages after `after` until its end or the client leaves. */
  private async follow(ws: WebSocket, id: string, after: number): Promise<void> {
    const watch = await this.engine.journal.watch((streamId) => streamId === runStream(id));
    const gone = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    ws.once('close', () => watch.wakeup.wake());
    try {
      const tail = this.engine.runs.tail(id, after);
      while (ws.readyState === ws.OPEN) {
        const { events, end } = await tail.next();
        for (const m of events.flatMap(textMessage)) {
          // `end`'s data names the run's last event (`{ type: 'run.completed' }`): `ended` here, `type` is the frame's
          const data = m.event === 'end' ? { ended: (m.data as { type: string }).type } : (m.data as object);
          ws.send(JSON.stringify({ type: m.event, id: Number(m.id), ...data }));
        }
        if (end) return ws.close(1000, 'the run ended');
        // a client that reads slowly is waited for, not buffered without end
        while (ws.bufferedAmount > MAX_BUFFERED && ws.readyState === ws.OPEN)
          await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 20))]);
        if (events.length === 0) await watch.wakeup.wait(this.pollMs);
      }
    } finally {
      await watch.stop();
    }
  }
}
