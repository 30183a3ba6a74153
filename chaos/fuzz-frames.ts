import { WebSocket } from 'ws';
import { closePayload, encodeFrame, OPCODE, rawWebSocket, type RawWebSocket } from '../src/testing/frames.js';
import type { FuzzFailure } from './fuzz.js';
import type { Random } from './lib/random.js';

export interface FrameFuzzOptions {
  /** The seeded source of every choice: one seed sends the same bytes. */
  random: Random;
  /** Connections to open, each sent one to four frames after a valid upgrade; default 200. */
  connections?: number;
  /** Headers of the upgrade and of every request (`Authorization: Bearer …`). */
  headers?: Record<string, string>;
  /** Stops opening connections after this (ms since the epoch). */
  deadline?: number;
}

export interface FrameFuzzReport {
  connections: number;
  frames: number;
  /** How each connection ended: a close code the server sent, `open` (it answered our ping after the frames), `dropped` (no close frame), `we-cut` (a truncated frame, then we reset). */
  outcomes: Record<string, number>;
  failures: FuzzFailure[];
}

const CHANNEL = 'fuzz-frames';
/** How long a connection may take to close or to answer the ping that follows its frames. */
const ANSWER_MS = 3_000;

interface Planned {
  bytes: Buffer;
  label: string;
  /** A JSON text frame that the server answers with `posted` or `error`. */
  answered?: boolean;
  /** The frame stops short of the length its header claims: nothing can follow it. */
  truncated?: boolean;
}

/**
 * Sends seeded random WebSocket frames to `/channels/fuzz-frames/ws` over raw TCP: random opcodes,
 * RSV bits, FIN, masks and lengths; oversize and lying lengths; truncated frames; fragments in bad
 * orders; control frames of every code; well-framed `post` frames whose fields are garbage. After
 * each connection, `/healthz` must answer 200; every 20 connections (and at the end) a client that
 * behaves must still receive a message posted over REST; no post may be answered with an internal
 * error (or close 1011); a connection that is not closed must still answer a ping.
 *
 * @example const report = await fuzzFrames(server.url, { random: seeded(1), connections: 100 }); expect(report.failures).toEqual([]);
 */
export async function fuzzFrames(baseUrl: string, options: FrameFuzzOptions): Promise<FrameFuzzReport> {
  const base = baseUrl.replace(/\/$/, '');
  const headers = options.headers ?? {};
  const report: FrameFuzzReport = { connections: 0, frames: 0, outcomes: {}, failures: [] };
  const fail = (input: string, problem: string, status = 0, body = '') =>
    report.failures.push({
      method: 'WebSocket frames',
      path: `/channels/${CHANNEL}/ws`,
      input: input.slice(0, 300),
      status,
      problem,
      body: body.slice(0, 500),
    });
  const watcher = await wellBehaved(base, headers);
  try {
    const total = options.connections ?? 200;
    for (let i = 0; i < total && Date.now() < (options.deadline ?? Number.POSITIVE_INFINITY); i++) {
      const plan = planConnection(options.random);
      const input = plan.map((p) => p.label).join(' | ');
      let raw: RawWebSocket;
      try {
        // far past the end: replaying the channel (every garbage post so far) to each connection would only cost time
        raw = await rawWebSocket(base, `/channels/${CHANNEL}/ws?after=1000000000`, headers);
      } catch (error) {
        fail(input, `the upgrade failed: ${(error as Error).message}`);
        break;
      }
      report.connections++;
      report.frames += plan.length;
      const outcome = await sendPlan(raw, plan, options.random, i);
      report.outcomes[outcome.kind] = (report.outcomes[outcome.kind] ?? 0) + 1;
      for (const problem of outcome.problems) fail(input, problem.text, problem.status, problem.body);
      const health = await fetch(`${base}/healthz`, { headers }).then(
        (r) => r.status,
        () => 0,
      );
      if (health !== 200) {
        fail(input, `/healthz answered ${health} afterwards`, health);
        if (health === 0) break;
      }
      if (i % 20 === 19 && !(await watcher.stillReceives(`canary-${i}`)))
        fail(input, 'a well-behaved client on the channel stopped receiving new messages');
    }
    if (!(await watcher.stillReceives('canary-end')))
      fail('(after all connections)', 'a well-behaved client on the channel stopped receiving new messages');
  } finally {
    watcher.close();
  }
  return report;
}

interface Outcome {
  kind: string;
  problems: { text: string; status: number; body: string }[];
}

/** Sends the frames, then a ping to learn whether the server is still there (it answers frames in order). */
async function sendPlan(raw: RawWebSocket, plan: Planned[], random: Random, n: number): Promise<Outcome> {
  const problems: Outcome['problems'] = [];
  for (const p of plan) raw.send(p.bytes);
  if (plan.some((p) => p.truncated)) {
    // a peer that vanishes mid-frame: half the time a FIN, half a RST
    await new Promise((r) => setTimeout(r, random.int(0, 20)));
    if (random.next() < 0.5) raw.socket.end();
    else raw.socket.resetAndDestroy();
    return { kind: 'we-cut', problems };
  }
  const marker = `probe-${n}`;
  raw.send(encodeFrame({ opcode: OPCODE.ping, payload: marker }));
  const expected = plan.filter((p) => p.answered).length;
  const answers = () => raw.frames.filter((f) => f.opcode === OPCODE.text).map((f) => safeJson(f.payload.toString()));
  const started = Date.now();
  let kind = 'silent';
  for (;;) {
    const end = await raw.end(20);
    const ponged = raw.frames.some((f) => f.opcode === OPCODE.pong && f.payload.toString() === marker);
    if (end.closeCode !== null) kind = String(end.closeCode);
    else if (end.ended) kind = 'dropped';
    else if (ponged && answers().filter((a) => a.type === 'posted' || a.type === 'error').length >= expected)
      kind = 'open';
    if (kind !== 'silent' || Date.now() - started > ANSWER_MS) break;
  }
  for (const answer of answers()) {
    const error = answer.error as { code?: string; message?: string } | undefined;
    if (answer.type === 'error' && (error?.code === 'internal' || error?.code === undefined))
      problems.push({
        text: 'answered 500 over the socket (an error frame with code internal)',
        status: 500,
        body: JSON.stringify(answer),
      });
  }
  if (kind === '1011')
    problems.push({ text: 'answered 500 over the socket (close 1011: the server failed)', status: 500, body: '' });
  if (kind === 'silent')
    problems.push({
      text: `neither closed the connection nor answered a ping within ${ANSWER_MS} ms`,
      status: 0,
      body: '',
    });
  if (kind === 'open') raw.send(encodeFrame({ opcode: OPCODE.close, payload: closePayload(1000) }));
  await raw.end(kind === 'open' ? 1_000 : 0);
  raw.socket.destroy();
  return { kind, problems };
}

function safeJson(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text);
    return value !== null && typeof value === 'object' ? value : {};
  } catch {
    return {};
  }
}

/** One to four frames; a truncated one, if any, is last. */
function planConnection(r: Random): Planned[] {
  const plan: Planned[] = [];
  const count = r.int(1, 4);
  for (let i = 0; i < count; i++) {
    const roll = r.next();
    if (roll < 0.3) plan.push(randomFrame(r));
    else if (roll < 0.55) plan.push(postFrame(r));
    else if (roll < 0.7) plan.push(controlFrame(r));
    else if (roll < 0.82) plan.push(...fragments(r));
    else if (roll < 0.9) plan.push(oversize(r));
    else {
      plan.push(truncated(r));
      break;
    }
  }
  return plan;
}

function randomBytes(r: Random, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = r.int(0, 255);
  return bytes;
}

function randomLength(r: Random): number {
  const roll = r.next();
  if (roll < 0.6) return r.int(0, 125);
  if (roll < 0.9) return r.int(126, 2_000);
  return r.int(65_536, 70_000);
}

/** Any header at all: opcode 0–15, any RSV bits, FIN or not, masked or not. */
function randomFrame(r: Random): Planned {
  const spec = {
    opcode: r.int(0, 15),
    rsv: r.next() < 0.3 ? r.int(1, 7) : 0,
    fin: r.next() < 0.8,
    mask: r.next() < 0.85,
  };
  const payload =
    r.next() < 0.5 ? randomBytes(r, randomLength(r)) : Buffer.from(JSON.stringify({ type: 'post', n: r.int(0, 1e6) }));
  return {
    bytes: encodeFrame({ ...spec, payload }),
    label: `op=${spec.opcode} rsv=${spec.rsv} fin=${spec.fin} mask=${spec.mask} len=${payload.length}`,
  };
}

/** Field values: valid ones, and the kinds of garbage the REST fuzzer sends, as JSON text. */
const GARBAGE = [
  'null',
  'true',
  '0',
  '-1',
  '9007199254740993',
  '""',
  '"user"',
  '"assistant"',
  '"system"',
  '"robot"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"\\udfff\\ud800"',
  '[]',
  '{}',
  '{"__proto__":{"polluted":true}}',
  '[[[[[[[[[[1]]]]]]]]]]',
  '"text"',
  '"json"',
];

function garbage(r: Random): string {
  const roll = r.next();
  if (roll < 0.08) return `"${'x'.repeat(r.int(60_000, 70_000))}"`;
  if (roll < 0.14) return `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
  if (roll < 0.2) return `${'{"a":'.repeat(2_000)}1${'}'.repeat(2_000)}`;
  return GARBAGE[r.int(0, GARBAGE.length - 1)]!;
}

/** A well-framed text frame of JSON: mostly `post` with some fields valid and some garbage. */
function postFrame(r: Random): Planned {
  const field = (valid: string) => (r.next() < 0.5 ? valid : garbage(r));
  const fields = [
    `"sender_id":${field('"fuzz"')}`,
    `"role":${field('"user"')}`,
    `"content":${field(`"hello ${r.int(0, 1e6)}"`)}`,
  ];
  if (r.next() < 0.5) fields.push(`"metadata":${field('{"k":"v"}')}`);
  if (r.next() < 0.5) fields.push(`"event_id":${field(`"e-${r.int(0, 50)}"`)}`);
  if (r.next() < 0.3) fields.push(`"content_type":${field('"text"')}`);
  const roll = r.next();
  const text =
    roll < 0.8
      ? `{"type":"post","message":{${fields.join(',')}}}`
      : roll < 0.9
        ? `{"type":${garbage(r)}}`
        : `{"type":"post","message":${garbage(r)}}`;
  return {
    bytes: encodeFrame({ opcode: OPCODE.text, payload: text }),
    label: `post ${text.length > 120 ? `${text.slice(0, 120)}…(${text.length})` : text}`,
    answered: Buffer.byteLength(text) <= 256 * 1024,
  };
}

/** Ping, pong or close, sometimes over 125 bytes, fragmented, or with a code no one may send. */
function controlFrame(r: Random): Planned {
  const opcode = [OPCODE.ping, OPCODE.pong, OPCODE.close][r.int(0, 2)]!;
  const fin = r.next() < 0.85;
  let payload = randomBytes(r, r.next() < 0.8 ? r.int(0, 125) : r.int(126, 300));
  if (opcode === OPCODE.close && r.next() < 0.8)
    payload = closePayload(r.int(0, 5_000), r.next() < 0.7 ? 'bye' : randomBytes(r, r.int(1, 20)));
  return {
    bytes: encodeFrame({ opcode, fin, payload }),
    label: `control op=${opcode} fin=${fin} len=${payload.length}${opcode === OPCODE.close && payload.length >= 2 ? ` code=${payload.readUInt16BE(0)}` : ''}`,
  };
}

/** A message in pieces, in a right or a wrong order. */
function fragments(r: Random): Planned[] {
  const first = r.next() < 0.8 ? OPCODE.text : r.int(0, 2);
  const pieces: Planned[] = [
    {
      bytes: encodeFrame({ opcode: first, fin: false, payload: '{"type":"po' }),
      label: `fragment op=${first} fin=false`,
    },
  ];
  const middle = r.int(0, 3);
  for (let i = 0; i < middle; i++) {
    const opcode = r.next() < 0.8 ? OPCODE.continuation : [OPCODE.text, OPCODE.ping][r.int(0, 1)]!;
    pieces.push({
      bytes: encodeFrame({ opcode, fin: false, payload: r.next() < 0.5 ? 'st"' : randomBytes(r, r.int(0, 40)) }),
      label: `fragment op=${opcode} fin=false`,
    });
  }
  if (r.next() < 0.7)
    pieces.push({
      bytes: encodeFrame({ opcode: OPCODE.continuation, fin: true, payload: ',"message":{}}' }),
      label: 'fragment op=0 fin=true',
    });
  return pieces;
}

/** Over the server's 256 KiB limit: a whole frame, or a header claiming up to 2^53 bytes. */
function oversize(r: Random): Planned {
  if (r.next() < 0.5) {
    const length = r.int(256 * 1024 + 1, 400 * 1024);
    return {
      bytes: encodeFrame({ opcode: OPCODE.text, payload: Buffer.alloc(length, 0x78) }),
      label: `text of ${length} bytes`,
    };
  }
  const length = r.next() < 0.5 ? 2 ** 53 - 1 : r.int(256 * 1024 + 1, 2 ** 31);
  return { bytes: encodeFrame({ opcode: r.int(1, 2), length }), label: `header alone claiming ${length} bytes` };
}

/** A header that promises more than is sent, or a header cut short. */
function truncated(r: Random): Planned {
  const claims = r.int(10, 100_000);
  const full = encodeFrame({ opcode: OPCODE.text, payload: Buffer.alloc(claims, 0x61) });
  const cut = r.int(1, Math.min(full.length - 1, 5_000));
  return { bytes: full.subarray(0, cut), label: `truncated: ${cut} of ${full.length} bytes`, truncated: true };
}

/** A `ws` client that follows the channel and answers whether a message posted now reaches it. */
async function wellBehaved(base: string, headers: Record<string, string>) {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/channels/${CHANNEL}/ws?after=0`, { headers });
  const contents = new Set<string>();
  ws.on('message', (data) => {
    const frame = safeJson(data.toString());
    const content = (frame.message as { content?: unknown } | undefined)?.content;
    if (frame.type === 'message' && typeof content === 'string') contents.add(content);
  });
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => ws.once('open', () => resolve()).once('error', reject));
  return {
    async stillReceives(content: string): Promise<boolean> {
      if (ws.readyState !== ws.OPEN) return false;
      const res = await fetch(`${base}/channels/${CHANNEL}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ sender_id: 'canary', role: 'user', content }),
      }).catch(() => null);
      if (!res || res.status >= 300) return false;
      for (const until = Date.now() + 5_000; Date.now() < until; await new Promise((r) => setTimeout(r, 20)))
        if (contents.has(content)) return true;
      return false;
    },
    close: () => ws.terminate(),
  };
}
