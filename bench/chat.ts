import { mkdtempSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { spawn, type ChildProcess } from 'node:child_process';
import { WebSocket } from 'ws';

export interface ChatSizes {
  channels: number;
  clientsPerChannel: number;
  ratePerS: number;
  seconds: number;
  warmup: number;
  ingestSeconds: number;
  ingestConcurrency: number;
  idleSeconds: number;
}

/**
 * Post → WebSocket receive latency with `channels × clientsPerChannel` sockets while messages are
 * posted over HTTP at `ratePerS`; sustained ingest over HTTP; and, on PostgreSQL, the queries the
 * server runs while the sockets are connected and nothing happens (workers off, so only delivery).
 */
export async function benchChat(
  database: string,
  sizes: ChatSizes,
  log: (line: string) => void,
): Promise<Record<string, number>> {
  const server = await serve(database);
  try {
    const m: Record<string, number> = {};
    const channels = Array.from({ length: sizes.channels }, (_, i) => `bench-${i}`);
    const sentAt = new Map<string, number>();
    const samples: number[] = [];
    const sockets = await Promise.all(
      channels.flatMap((c) =>
        Array.from({ length: sizes.clientsPerChannel }, () => connect(server, c, sentAt, samples)),
      ),
    );
    if (database.startsWith('postgres')) {
      m.ws_idle_queries_per_s = await idleQueries(database, sizes.idleSeconds);
      log(`idle with ${sockets.length} sockets: ${m.ws_idle_queries_per_s} queries/s`);
    }
    const total = sizes.ratePerS * sizes.seconds;
    const posts: Promise<unknown>[] = [];
    const start = performance.now();
    for (let i = 0; i < total + sizes.warmup; i++) {
      await sleep(start + (i * 1000) / sizes.ratePerS - performance.now());
      const id = i < sizes.warmup ? `w${i}` : `m${i}`;
      sentAt.set(id, performance.now());
      posts.push(post(server, channels[i % channels.length]!, id));
    }
    await Promise.all(posts);
    const expected = total * sizes.clientsPerChannel;
    const deadline = Date.now() + 30_000;
    while (samples.length < expected && Date.now() < deadline) await sleep(20);
    if (samples.length < expected) throw new Error(`sockets received ${samples.length} of ${expected} messages`);
    samples.sort((a, b) => a - b);
    m.ws_latency_p50_ms = samples[Math.floor(samples.length * 0.5)]!;
    m.ws_latency_p99_ms = samples[Math.floor(samples.length * 0.99)]!;
    m.ws_rate_per_s = sizes.ratePerS;
    log(
      `${total} posts at ${sizes.ratePerS}/s to ${sockets.length} sockets: p50 ${m.ws_latency_p50_ms.toFixed(2)} ms, p99 ${m.ws_latency_p99_ms.toFixed(2)} ms`,
    );
    for (const ws of sockets) ws.terminate();
    m.ingest_per_s = await ingest(server, channels, sizes.ingestSeconds, sizes.ingestConcurrency);
    Object.assign(m, await httpFloor(sizes.ratePerS, total));
    log(
      `floor: the same posts to a bare node:http echo at the same rate: p50 ${m.http_floor_p50_ms!.toFixed(2)} ms, p99 ${m.http_floor_p99_ms!.toFixed(2)} ms`,
    );
    return m;
  } finally {
    server.proc.kill('SIGTERM');
    await new Promise((done) => server.proc.once('exit', done));
  }
}

interface Served {
  url: string;
  proc: ChildProcess;
}

/** `runledger serve --no-workers` in its own process, as deployed: the load generator here does not share its event loop. */
async function serve(database: string): Promise<Served> {
  const flag = database.startsWith('postgres') ? '--database-url' : '--db';
  const env = { ...process.env, RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-bench-')) };
  const proc = spawn(process.execPath, ['bin/runledger.js', 'serve', '--no-workers', '--port', '0', flag, database], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await sleep(20)) {
    const url = /serving (http:\/\/\S+)/.exec(output)?.[1];
    if (url) return { url, proc };
  }
  proc.kill('SIGKILL');
  throw new Error(`the server did not start: ${output}`);
}

function connect(server: Served, channel: string, sentAt: Map<string, number>, samples: number[]): Promise<WebSocket> {
  const ws = new WebSocket(`${server.url.replace('http', 'ws')}/channels/${channel}/ws`);
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    const id = frame.message?.content as string;
    if (id?.startsWith('m')) samples.push(performance.now() - sentAt.get(id)!);
  });
  return new Promise((resolve, reject) => ws.once('open', () => resolve(ws)).once('error', reject));
}

async function post(server: Served, channel: string, content: string): Promise<void> {
  const res = await send(
    `${server.url}/channels/${channel}/messages`,
    JSON.stringify({ sender_id: 'bench', role: 'system', content }),
  );
  if (res.status !== 201) throw new Error(`post answered ${res.status}: ${res.body}`);
}

/**
 * The load generator's POST: node:http over kept-alive sockets. Not fetch: on Node 20 a fetch
 * costs its caller about 0.8 ms of CPU (0.25 ms this way), which on two cores this process shares
 * with the server it measures was a third of a core at 1,000 posts/s.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
function send(url: string, body: string, retried = false): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        agent,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        res.on('error', reject);
      },
    );
    // a kept-alive socket the server closed as it was reused (its idle timeout): sent again once, on a new one
    req.on('error', (error: NodeJS.ErrnoException) =>
      req.reusedSocket && error.code === 'ECONNRESET' && !retried
        ? send(url, body, true).then(resolve, reject)
        : reject(error),
    );
    req.end(body);
  });
}

async function ingest(server: Served, channels: string[], seconds: number, concurrency: number): Promise<number> {
  let count = 0;
  const until = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < until)
        await post(server, channels[(w + count++) % channels.length]!, `i${w}-${count}`);
    }),
  );
  return count / ((performance.now() - start) / 1000);
}

const ECHO = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(201).end('{}')); }).listen(0, '127.0.0.1', function () { console.log('serving http://127.0.0.1:' + this.address().port); });`;

/**
 * The round trip of the same posts, sent the same way, to a bare node:http server in its own
 * process: what this machine's HTTP stack costs before runledger does anything (the floor under
 * ws_latency_*).
 */
async function httpFloor(
  ratePerS: number,
  count: number,
): Promise<{ http_floor_p50_ms: number; http_floor_p99_ms: number }> {
  const proc = spawn(process.execPath, ['-e', ECHO], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  while (!/serving (\S+)/.test(output)) await sleep(20);
  const url = /serving (\S+)/.exec(output)![1]!;
  const samples: number[] = [];
  const posts: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    await sleep(start + (i * 1000) / ratePerS - performance.now());
    const t = performance.now();
    posts.push(send(url, JSON.stringify({ i })).then(() => void samples.push(performance.now() - t)));
  }
  await Promise.all(posts);
  proc.kill();
  samples.sort((a, b) => a - b);
  return {
    http_floor_p50_ms: samples[Math.floor(samples.length * 0.5)]!,
    http_floor_p99_ms: samples[Math.floor(samples.length * 0.99)]!,
  };
}

/** Transactions the database saw per second while nothing happened, minus this measurement's own. */
async function idleQueries(database: string, seconds: number): Promise<number> {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  const read = async () =>
    Number(
      (
        await client.query(
          'SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
        )
      ).rows[0].n,
    );
  try {
    await sleep(1500);
    await client.query('SELECT pg_stat_clear_snapshot()');
    const before = await read();
    await sleep(seconds * 1000);
    await client.query('SELECT pg_stat_clear_snapshot()');
    const after = await read();
    return Math.max(0, after - before - 2) / seconds;
  } finally {
    await client.end();
  }
}
