import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { closePayload, encodeFrame, OPCODE, rawWebSocket } from '../src/testing/frames.js';
import { watch } from '../src/testing/socket.js';
import { serve, type Served } from './child.js';

const CHANNEL = 'frames';
const text = (payload: string | Buffer) => ({ opcode: OPCODE.text, payload });

/** Frames RFC 6455 forbids a client to send, and the close code `ws` answers each with (1009 too big, 1002 protocol error, 1007 bad data). */
const MALFORMED: [string, number, Buffer][] = [
  ['a text frame of 300 KiB (over the 256 KiB maxPayload)', 1009, encodeFrame(text('x'.repeat(300 * 1024)))],
  ['a header alone that claims 2^40 bytes', 1009, encodeFrame({ opcode: OPCODE.binary, length: 2 ** 40 })],
  ['reserved data opcode 0x3', 1002, encodeFrame({ opcode: 0x3, payload: '{}' })],
  ['reserved control opcode 0xB', 1002, encodeFrame({ opcode: 0xb })],
  ['RSV1 set with no extension negotiated', 1002, encodeFrame({ ...text('{}'), rsv: 0b100 })],
  ['RSV2 and RSV3 set', 1002, encodeFrame({ ...text('{}'), rsv: 0b011 })],
  ['an unmasked client frame', 1002, encodeFrame({ ...text('{}'), mask: false })],
  ['invalid UTF-8 in a text frame', 1007, encodeFrame(text(Buffer.from([0x7b, 0xc3, 0x28, 0x7d])))],
  [
    'a ping of 126 bytes (control frames carry ≤ 125)',
    1002,
    encodeFrame({ opcode: OPCODE.ping, payload: Buffer.alloc(126, 1) }),
  ],
  ['a fragmented ping (FIN clear)', 1002, encodeFrame({ opcode: OPCODE.ping, fin: false, payload: 'p' })],
  ['close code 999', 1002, encodeFrame({ opcode: OPCODE.close, payload: closePayload(999) })],
  ['close code 1005 (reserved, never sent)', 1002, encodeFrame({ opcode: OPCODE.close, payload: closePayload(1005) })],
  ['a close frame of one byte', 1002, encodeFrame({ opcode: OPCODE.close, payload: Buffer.from([3]) })],
  [
    'invalid UTF-8 in a close reason',
    1007,
    encodeFrame({ opcode: OPCODE.close, payload: closePayload(1000, Buffer.from([0xff, 0xfe])) }),
  ],
  ['a continuation with no message to continue', 1002, encodeFrame({ opcode: OPCODE.continuation, payload: 'x' })],
  [
    'a new text frame inside a fragmented message',
    1002,
    Buffer.concat([encodeFrame({ ...text('{"a"'), fin: false }), encodeFrame(text('{}'))]),
  ],
  [
    'a fragmented message over maxPayload in total',
    1009,
    Buffer.concat([
      encodeFrame({ ...text('x'.repeat(200 * 1024)), fin: false }),
      encodeFrame({ opcode: OPCODE.continuation, payload: 'y'.repeat(100 * 1024) }),
    ]),
  ],
];

const upgrade = (path: string) =>
  `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`;

/** Writes `request` on a fresh TCP connection, waits `afterMs`, then resets it (RST, not FIN): the client vanished. Resolves with what the server had answered by then. */
async function resetAfter(url: string, request: string, afterMs: number): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  let answer = '';
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
  const connected = await new Promise<boolean>((resolve) => {
    socket.once('connect', () => resolve(true));
    socket.on('error', () => resolve(false));
  });
  if (!connected) throw new Error(`cannot connect to ${url} any more`);
  socket.write(request);
  await new Promise((r) => setTimeout(r, afterMs));
  socket.resetAndDestroy();
  return answer;
}

describe.each(backends)('one bad WebSocket frame or vanished client on $name', (backend) => {
  let server: Served;
  let good: ReturnType<typeof watch>;
  let posted = 0;

  beforeAll(async () => {
    // no workers: nothing answers the posts, so the good client sees exactly what we post
    server = await serve(await backend.create(), ['--no-workers']);
    good = watch(server.url, CHANNEL);
    await good.open;
  }, 30_000);

  afterAll(async () => {
    good?.ws.terminate();
    server?.proc.kill('SIGKILL');
    await server?.exited;
  });

  /** The server still runs, answers `/healthz`, and the well-behaved client on the channel still gets what is posted. */
  const stillServing = async () => {
    expect(server.proc.exitCode, server.output().slice(-2000)).toBeNull();
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const res = await fetch(`${server.url}/channels/${CHANNEL}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sender_id: 'u', role: 'user', content: `after ${posted}` }),
    });
    expect(res.status).toBe(201);
    posted++;
    await eventually(() => good.messages.length === posted, 5_000);
    expect(good.ws.readyState).toBe(good.ws.OPEN);
  };

  it.each(MALFORMED)(
    '%s: disconnects that client with close code %i, and only that client',
    async (_label, code, bytes) => {
      const raw = await rawWebSocket(server.url, `/channels/${CHANNEL}/ws`);
      raw.send(bytes);
      expect(await raw.end(5_000)).toEqual({ closeCode: code, ended: true });
      await stillServing();
    },
  );

  it('cuts off a bad peer that ignores the close frame and keeps its side open within seconds, not the 30 s ws would wait', async () => {
    const { hostname, port } = new URL(server.url);
    const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true });
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    let closed = false;
    socket.once('close', () => (closed = true));
    socket.write(upgrade(`/channels/${CHANNEL}/ws`));
    await eventually(() => answer.includes('\r\n\r\n'));
    expect(answer.slice(0, 12)).toBe('HTTP/1.1 101');
    socket.write(encodeFrame({ opcode: 0x3 }));
    // only a write tells this peer its server let go: the kernel answers it with a reset once the server closed the socket
    const started = Date.now();
    while (!closed && Date.now() - started < 5_000) {
      await new Promise((r) => setTimeout(r, 200));
      if (!socket.destroyed) socket.write(encodeFrame(text('{}')));
    }
    expect(closed).toBe(true);
    socket.destroy();
    await stillServing();
  });

  it('survives clients that reset (RST) mid-handshake, while refused, mid-wait, mid-stream', async () => {
    const run = await (
      await fetch(`${server.url}/workflows`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'held', steps: [{ id: 'log', type: 'log', config: { message: 'x' } }] }),
      })
    ).json();
    // no workers: the execution stays queued, so a wait on it waits and its event stream stays open
    const execution = await (
      await fetch(`${server.url}/workflows/${run.id}/execute`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      })
    ).json();
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    // the first line each answers given time (none yet: still waiting), so the resets below land where their label says
    const cases: [string, string, number, string][] = [
      ['an accepted upgrade', upgrade(`/channels/${CHANNEL}/ws`), 0, 'HTTP/1.1 101'],
      ['an upgrade refused 400', upgrade(`/channels/${CHANNEL}/ws?after=-1`), 0, 'HTTP/1.1 400'],
      ['an upgrade refused 404', upgrade('/nowhere/ws'), 0, 'HTTP/1.1 404'],
      ['half an upgrade request', upgrade(`/channels/${CHANNEL}/ws`).slice(0, 40), 0, ''],
      ['a long-poll wait', get(`/runs/${execution.execution_id}/wait?timeout=5s`), 20, ''],
      ['an SSE stream', get(`/runs/${execution.execution_id}/events/stream`), 20, 'HTTP/1.1 200'],
    ];
    for (const [label, request, , first] of cases)
      expect((await resetAfter(server.url, request, 300)).slice(0, 12), label).toBe(first);
    // each many times and at a few delays: the reset has to land while the server writes its answer
    for (let i = 0; i < 10; i++) {
      for (const [label, request, ms] of cases) {
        await resetAfter(server.url, request, ms + (i % 3));
        await new Promise((r) => setTimeout(r, 20));
        expect(
          server.proc.exitCode,
          `${label}, reset after ${ms + (i % 3)} ms, killed the server:\n${server.output().slice(-1500)}`,
        ).toBeNull();
      }
    }
    await stillServing();
  });
});
