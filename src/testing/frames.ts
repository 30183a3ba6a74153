import { connect, type Socket } from 'node:net';

/** WebSocket opcodes (RFC 6455 §5.2); 0x3–0x7 and 0xB–0xF are reserved. */
export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** One frame as it goes on the wire; anything the RFC forbids may be set, that is the point. */
export interface FrameSpec {
  opcode: number;
  payload?: Buffer | string;
  /** Default true. */
  fin?: boolean;
  /** RSV1..RSV3 as the three bits 0b100, 0b010, 0b001; default 0. */
  rsv?: number;
  /** A client must mask (RFC 6455 §5.1); default true. */
  mask?: boolean;
  /** The length the header claims, when it should differ from the payload's (a lie, or a header alone). */
  length?: number;
}

/** The bytes of `spec`: header, extended length, masking key (fixed, so a seed replays the same bytes), payload. */
export function encodeFrame(spec: FrameSpec): Buffer {
  const payload = typeof spec.payload === 'string' ? Buffer.from(spec.payload) : (spec.payload ?? Buffer.alloc(0));
  const length = spec.length ?? payload.length;
  const mask = spec.mask ?? true;
  const first = ((spec.fin ?? true) ? 0x80 : 0) | (((spec.rsv ?? 0) & 7) << 4) | (spec.opcode & 0xf);
  let header: Buffer;
  if (length < 126) header = Buffer.from([first, (mask ? 0x80 : 0) | length]);
  else if (length < 0x10000) {
    header = Buffer.alloc(4);
    header.writeUInt16BE(length, 2);
    header[1] = (mask ? 0x80 : 0) | 126;
  } else {
    header = Buffer.alloc(10);
    header.writeBigUInt64BE(BigInt(length), 2);
    header[1] = (mask ? 0x80 : 0) | 127;
  }
  header[0] = first;
  if (!mask) return Buffer.concat([header, payload]);
  const key = Buffer.from([0x37, 0xfa, 0x21, 0x3d]);
  const masked = Buffer.from(payload);
  for (let i = 0; i < masked.length; i++) masked[i]! ^= key[i % 4]!;
  return Buffer.concat([header, key, masked]);
}

/** A close frame's payload: the status code, then the reason. */
export function closePayload(code: number, reason: Buffer | string = ''): Buffer {
  const head = Buffer.alloc(2);
  head.writeUInt16BE(code);
  return Buffer.concat([head, typeof reason === 'string' ? Buffer.from(reason) : reason]);
}

export interface ServerFrame {
  opcode: number;
  payload: Buffer;
}

/** Whole frames at the start of `bytes` (a server's frames are never masked), and what is left over. */
export function decodeFrames(bytes: Buffer): { frames: ServerFrame[]; rest: Buffer } {
  const frames: ServerFrame[] = [];
  let at = 0;
  for (;;) {
    if (bytes.length - at < 2) break;
    let length = bytes[at + 1]! & 0x7f;
    let start = at + 2;
    if (length === 126) {
      if (bytes.length < start + 2) break;
      length = bytes.readUInt16BE(start);
      start += 2;
    } else if (length === 127) {
      if (bytes.length < start + 8) break;
      length = Number(bytes.readBigUInt64BE(start));
      start += 8;
    }
    if (bytes.length < start + length) break;
    frames.push({ opcode: bytes[at]! & 0xf, payload: bytes.subarray(start, start + length) });
    at = start + length;
  }
  return { frames, rest: bytes.subarray(at) };
}

/** How the server ended a raw connection: the code of its close frame (null: none came), or still open when the wait ran out. */
export interface RawEnd {
  closeCode: number | null;
  /** The TCP connection ended (by the server, or by us after its close frame). */
  ended: boolean;
}

export interface RawWebSocket {
  socket: Socket;
  /** Frames received so far (messages, pings, the close). */
  frames: ServerFrame[];
  send(bytes: Buffer): void;
  /** Resolves once the connection is over, or after `ms` with `ended: false`. */
  end(ms: number): Promise<RawEnd>;
}

/**
 * A WebSocket client over a raw TCP socket, for sending frames no library would: it does the
 * upgrade by hand (rejects unless the answer is 101), then records the server's frames and answers
 * a close frame by ending the connection.
 *
 * @example const raw = await rawWebSocket(server.url, '/channels/general/ws'); raw.send(encodeFrame({ opcode: 3 })); expect((await raw.end(5000)).closeCode).toBe(1002);
 */
export function rawWebSocket(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
  timeoutMs = 5_000,
): Promise<RawWebSocket> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port || 80) });
    const frames: ServerFrame[] = [];
    let head = Buffer.alloc(0);
    let upgraded = false;
    let closeCode: number | null = null;
    let ended = false;
    const endWaiters: (() => void)[] = [];
    const timer = setTimeout(
      () => fail(new Error(`no answer to the upgrade of ${path} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const fail = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    const over = () => {
      ended = true;
      clearTimeout(timer);
      for (const wake of endWaiters.splice(0)) wake();
      if (!upgraded)
        reject(
          new Error(
            `the connection closed before the upgrade of ${path} was answered: ${head.toString('latin1').slice(0, 200)}`,
          ),
        );
    };
    socket.on('error', () => {});
    socket.on('close', over);
    socket.on('data', (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (!upgraded) {
        const blank = head.indexOf('\r\n\r\n');
        if (blank < 0) return;
        const status = /^HTTP\/1\.1 (\d{3})/.exec(head.toString('latin1'))?.[1];
        if (status !== '101')
          return fail(
            new Error(
              `the upgrade of ${path} was answered ${status ?? 'with no status line'}: ${head.toString('latin1').slice(0, 300)}`,
            ),
          );
        upgraded = true;
        clearTimeout(timer);
        head = head.subarray(blank + 4);
        resolve(raw);
      }
      const { frames: got, rest } = decodeFrames(head);
      head = Buffer.from(rest);
      for (const frame of got) {
        frames.push(frame);
        if (frame.opcode === OPCODE.close && closeCode === null) {
          closeCode = frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : 1005;
          socket.end();
        }
      }
    });
    const raw: RawWebSocket = {
      socket,
      frames,
      send: (bytes) => void socket.write(bytes),
      end: (ms) =>
        new Promise((done) => {
          const finish = () => done({ closeCode, ended });
          if (ended) return finish();
          const t = setTimeout(finish, ms);
          endWaiters.push(() => {
            clearTimeout(t);
            finish();
          });
        }),
    };
    const extra = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`,
    );
  });
}
