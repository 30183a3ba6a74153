import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { sseReader, type SseMessage } from '../dist/sse-read.js';
import { withDatabase, type Backend } from './databases.js';
import { chunksOf, wallNow, type TimedInput } from './generate-flows.js';

export interface GenerateSizes {
  /** Generations streaming at once in the overhead measurement, each read by its own SSE client. */
  generations: number;
  /** Chunks a second each generation streams. */
  chunksPerS: number;
  /** How long each generation streams. */
  seconds: number;
  /** Chunks are counted from this long after the last run started until the first one ends: all of them streaming. */
  warmupMs: number;
  /** Kills of `runledger serve` mid-answer in the crash measurement; its figure is their median. */
  crashes: number;
}

/** `--long`: half a minute of 100 generations, five crashes. */
export const GENERATE_SIZES: GenerateSizes = {
  generations: 100,
  chunksPerS: 50,
  seconds: 30,
  warmupMs: 500,
  crashes: 5,
};
/** What `npm run bench` measures by default: about 20 s a backend. */
export const GENERATE_SHORT: GenerateSizes = { ...GENERATE_SIZES, seconds: 5, crashes: 2 };

/** TextBatches (src/runtime/pass/text-batches.ts) writes a batch at most this often: 50 ms, less 1 for Date.now()'s rounding. */
const BATCH_MS = 49;
/** The crash measurement's generation: 20 chunks a second, killed after `KILL_AFTER` of its 40 reached the client. */
const SLOW: Omit<TimedInput, 'phaseMs'> = { chunks: 40, intervalMs: 50 };
const KILL_AFTER = 20;
/** The overhead measurement's runs are started this many at a time, and stream from this long after the first start. */
const START_GROUP = 20;
const START_MS = 3000;

/**
 * ctx.generate's keys (issue 46), each on a fresh database of `backend`:
 *
 * `generate_chunk_overhead_p50_ms` / `_p99_ms`: `generations` runs at once in a server process of their own (the
 * server `runledger serve` runs, with room for that many runs), each streaming `chunksPerS` chunks a second from a
 * model of the bench's own (bench/generate-flows.ts: no HTTP, each chunk carries the wall-clock time it was yielded
 * at), each read by an SSE client on `GET /runs/{id}/stream` in this process: from the model yielding a chunk to
 * its client receiving it, for the chunks yielded from `warmupMs` after the last run started until the first run
 * ended (all of them streaming). That includes the wait for the chunk's batch (the text is journaled in batches at most
 * 50 ms apart, so a chunk waits up to 50 ms before its write begins). `generate_batch_delivery_p50_ms` / `_p99_ms`:
 * the rest, per delivered batch: from its write beginning (estimated from below: not before its newest chunk, nor
 * before 50 ms after the batch before began) to the client receiving it, so an upper bound of journaling and
 * delivering a batch.
 *
 * `resume_after_crash_ms`: a real `runledger serve` generating slowly, a client reading the run's stream; the server
 * is killed with SIGKILL after the client has `KILL_AFTER` chunks and started again at once on the same port; the
 * client reconnects with its Last-Event-ID. From the kill to the client receiving the first text of the attempt that
 * took the answer up (the text after the `resumed` message): process start, the dead process's leases ended, the run
 * claimed and replayed, the model asked to continue, its first chunk journaled and delivered. Median of `crashes`.
 *
 * Every client's text is checked: each chunk once, in order, none missing.
 */
export async function benchGenerate(
  backend: Backend,
  sizes: GenerateSizes,
  log: (line: string) => void = () => {},
): Promise<Record<string, number>> {
  const load = loadavg()[0]!.toFixed(1);
  const o = await withDatabase(backend, (db) => chunkOverhead(db, sizes));
  const ms = (key: string) => o.keys[key]!.toFixed(2);
  log(
    `generate_chunk_overhead: p50 ${ms('generate_chunk_overhead_p50_ms')} ms, p99 ${ms('generate_chunk_overhead_p99_ms')} ms; ` +
      `a batch's write → client: p50 ${ms('generate_batch_delivery_p50_ms')} ms, p99 ${ms('generate_batch_delivery_p99_ms')} ms ` +
      `(${sizes.generations} generations × ${sizes.chunksPerS} chunks/s: ${o.chunks} chunks in ${o.batches} batches; ` +
      `starts ${o.startsMs.toFixed(0)} ms; server CPU ${o.serverCpuPct ?? '?'} %; load ${load} → ${loadavg()[0]!.toFixed(1)})`,
  );
  const crashes = await withDatabase(backend, (db) => resumeAfterCrash(db, sizes, log));
  return { ...o.keys, resume_after_crash_ms: crashes };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;

interface Overhead {
  keys: Record<string, number>;
  /** For the log: chunks and batches counted, how long the starts took, the server's CPU while all streamed. */
  chunks: number;
  batches: number;
  startsMs: number;
  serverCpuPct: number | null;
}

async function chunkOverhead(database: string, sizes: GenerateSizes): Promise<Overhead> {
  const child = fileURLToPath(new URL('./generate-child.ts', import.meta.url));
  const server = await launch(['--import', 'tsx', child, database, String(sizes.generations)]);
  try {
    const intervalMs = 1000 / sizes.chunksPerS;
    const chunks = sizes.chunksPerS * sizes.seconds;
    // [when it was yielded or its batch's write began, its latency]: measured while every generation streams
    const latencies: Array<[number, number]> = [];
    const delivery: Array<[number, number]> = [];
    let firstEnd = Number.POSITIVE_INFINITY;
    const readRun = async (url: string, id: string) => {
      const got: number[] = [];
      let lastWrite = Number.NEGATIVE_INFINITY;
      const how = await openStream(url, null, (m, at) => {
        if (m.event === 'generated') firstEnd = Math.min(firstEnd, at);
        if (m.event !== 'text') return;
        const pieces = chunksOf((JSON.parse(m.data) as { text: string }).text);
        if (pieces.length === 0) return;
        for (const c of pieces) {
          got.push(c.index);
          latencies.push([c.at, at - c.at]);
        }
        // the earliest this batch's write can have begun: it holds its newest chunk, and follows the last by 50 ms
        const write = Math.max(pieces.at(-1)!.at, lastWrite + BATCH_MS);
        lastWrite = write;
        delivery.push([write, at - write]);
      });
      checkWhole(id, got, chunks, how);
    };
    // the runs start in groups; their models wait for `startAt`, so every generation streams from then on
    const startsFrom = wallNow();
    const startAt = startsFrom + START_MS;
    const readers: Promise<void>[] = [];
    let settled = 0;
    const failures: unknown[] = [];
    for (let first = 0; first < sizes.generations; first += START_GROUP) {
      const group = Array.from({ length: Math.min(START_GROUP, sizes.generations - first) }, (_, j) => first + j);
      await Promise.all(
        group.map(async (i) => {
          const id = `gen-${i}`;
          // each run's chunks at its own phase of the interval: 100 runs in step would yield 100 chunks at one instant
          const phaseMs = (i * intervalMs) / sizes.generations;
          await startRun(server.url, id, { chunks, intervalMs, phaseMs, startAt });
          readers.push(
            readRun(`${server.url}/runs/${id}/stream`, id)
              .catch((error: unknown) => {
                failures.push(error);
              })
              .finally(() => {
                settled += 1;
              }),
          );
        }),
      );
    }
    const startsMs = wallNow() - startsFrom;
    const from = Math.max(startAt, wallNow()) + sizes.warmupMs;
    while (wallNow() < from) await sleep(5);
    const cpuFrom = cpuMs(server.proc.pid!);
    while (wallNow() < firstEnd && settled < readers.length) await sleep(5);
    const cpuTo = cpuMs(server.proc.pid!);
    const serverCpuPct =
      cpuFrom === null || cpuTo === null ? null : Math.round(((cpuTo - cpuFrom) / (wallNow() - from)) * 100);
    await Promise.all(readers);
    if (failures.length > 0) throw failures[0];
    const window = (samples: Array<[number, number]>) =>
      samples
        .filter(([t]) => t >= from && t < firstEnd)
        .map(([, ms]) => ms)
        .sort((a, b) => a - b);
    const chunkMs = window(latencies);
    const batchMs = window(delivery);
    if (chunkMs.length === 0)
      throw new Error(`no chunk was yielded while all ${sizes.generations} generations streamed`);
    const keys = {
      generate_chunk_overhead_p50_ms: pct(chunkMs, 0.5),
      generate_chunk_overhead_p99_ms: pct(chunkMs, 0.99),
      generate_batch_delivery_p50_ms: pct(batchMs, 0.5),
      generate_batch_delivery_p99_ms: pct(batchMs, 0.99),
    };
    return { keys, chunks: chunkMs.length, batches: batchMs.length, startsMs, serverCpuPct };
  } finally {
    await stop(server.proc);
  }
}

/** A client's chunks are each chunk of the answer once, in order, and its stream ended with the run. */
function checkWhole(id: string, got: number[], chunks: number, how: string): void {
  const wrong = got.findIndex((index, i) => index !== i);
  if (how !== 'end' || got.length !== chunks || wrong >= 0)
    throw new Error(
      `run ${id}: the client read ${got.length} of ${chunks} chunks (stream ${how}), ` +
        (wrong >= 0 ? `chunk ${got[wrong]} where ${wrong} belongs` : 'in order'),
    );
}

async function resumeAfterCrash(database: string, sizes: GenerateSizes, log: (line: string) => void): Promise<number> {
  const port = await freePort();
  const flows = fileURLToPath(new URL('./generate-flows.ts', import.meta.url));
  const bin = fileURLToPath(new URL('../bin/runledger.js', import.meta.url));
  const flag = database.startsWith('postgres') ? '--database-url' : '--db';
  const env = { RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-bench-crash-')), RUNLEDGER_LOG_LEVEL: 'warn' };
  const args = [bin, 'serve', '--port', String(port), flag, database, '--workflows', flows];
  let server = await launch(args, env);
  const figures: number[] = [];
  try {
    for (let round = 0; round < sizes.crashes; round++) {
      const id = `crash-${round}`;
      await startRun(server.url, id, { ...SLOW, phaseMs: 0 });
      const reader = follow(server.url, id);
      await until(() => reader.state.got.length >= KILL_AFTER, `run ${id}'s first ${KILL_AFTER} chunks`);
      const killedAt = wallNow();
      server.proc.kill('SIGKILL');
      await exited(server.proc);
      server = await launch(args, env);
      const upAt = server.at;
      await until(() => reader.state.newTextAt !== null, `run ${id}'s new text after the restart`);
      const newTextAt = reader.state.newTextAt!;
      const firstAt = reader.state.firstAt!;
      figures.push(newTextAt - killedAt);
      checkWhole(id, reader.state.got, SLOW.chunks, await reader.done);
      log(
        `resume_after_crash, kill ${round + 1}: serving again after ${(upAt - killedAt).toFixed(0)} ms, the stream's ` +
          `first message after ${(firstAt - killedAt).toFixed(0)} ms, the new attempt's first text after ` +
          `${(newTextAt - killedAt).toFixed(0)} ms (load ${loadavg()[0]!.toFixed(1)})`,
      );
    }
  } finally {
    await stop(server.proc);
  }
  figures.sort((a, b) => a - b);
  return pct(figures, 0.5);
}

interface Follower {
  got: number[];
  /** When the first message after the kill arrived (the client reconnected), and the new attempt's first text. */
  firstAt: number | null;
  newTextAt: number | null;
}

/**
 * A client that reads a run's text stream to its end, through a server's crash: when the connection breaks it
 * connects again every 10 ms (refused while the server is down, 503 while it starts) with its Last-Event-ID.
 */
function follow(url: string, id: string): { state: Follower; done: Promise<string> } {
  const state: Follower = { got: [], firstAt: null, newTextAt: null };
  let lastId: string | null = null;
  let broke = false;
  let resumed = false;
  const done = (async () => {
    for (;;) {
      const how = await openStream(`${url}/runs/${id}/stream`, lastId, (m, at) => {
        lastId = m.id || lastId;
        if (broke && state.firstAt === null) state.firstAt = at;
        if (broke && m.event === 'resumed') resumed = true;
        if (m.event !== 'text') return;
        if (resumed && state.newTextAt === null) state.newTextAt = at;
        for (const c of chunksOf((JSON.parse(m.data) as { text: string }).text)) state.got.push(c.index);
      }).catch(() => 'refused');
      if (how === 'end') return how;
      if (how === 'broken') broke = true;
      await sleep(10);
    }
  })();
  return { state, done };
}

/**
 * `GET url` as Server-Sent Events until the server closes it: `end` when the run's `end` came, `broken` when the
 * connection ended before. Rejects when the server refuses the connection or answers other than 200. node:http, not
 * fetch: 100 streams parsed in this process would cost it more CPU through fetch's streams.
 */
function openStream(
  url: string,
  lastId: string | null,
  onMessage: (m: SseMessage, at: number) => void,
): Promise<'end' | 'broken'> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: lastId ? { 'last-event-id': lastId } : {} }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${url} answered ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      const parse = sseReader();
      let ended = false;
      res.on('data', (chunk: string) => {
        const at = wallNow();
        for (const m of parse(chunk)) {
          if (m.event === 'end') ended = true;
          onMessage(m, at);
        }
      });
      res.on('error', () => {});
      res.on('close', () => resolve(ended ? 'end' : 'broken'));
    });
    req.on('error', reject);
    req.end();
  });
}

async function startRun(url: string, id: string, input: TimedInput): Promise<void> {
  const res = await fetch(`${url}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ workflow: 'bench.generate', id, input }),
  });
  if (res.status !== 202) throw new Error(`POST /runs answered ${res.status}: ${await res.text()}`);
}

interface Launched {
  url: string;
  proc: ChildProcess;
  /** When it printed that it serves. */
  at: number;
}

/** `node …args` (a server), resolved once it prints `serving <url>`. */
async function launch(args: string[], env: Record<string, string> = {}): Promise<Launched> {
  const proc = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`the server did not start in 30 s: ${output}`));
    }, 30_000);
    proc.stdout!.on('data', (chunk) => {
      output += chunk;
      const url = /serving (http:\/\/\S+)/.exec(output)?.[1];
      if (!url) return;
      clearTimeout(timer);
      proc.stdout!.removeAllListeners('data');
      proc.stdout!.resume();
      resolve({ url, proc, at: wallNow() });
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before serving: ${output}`));
    });
  });
}

/** Waits for `done()`, failing after 60 s with what it waited for. */
async function until(done: () => boolean, what: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; !done(); await sleep(5))
    if (Date.now() > deadline) throw new Error(`waited 60 s for ${what}`);
}

function exited(proc: ChildProcess): Promise<unknown> {
  return proc.exitCode !== null || proc.signalCode !== null
    ? Promise.resolve()
    : new Promise((done) => proc.once('exit', done));
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  await exited(proc);
}

/** A process's CPU time so far (user + system, ms) from /proc; null where there is none. */
function cpuMs(pid: number): number | null {
  try {
    // the fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
/** Linux's USER_HZ, the same on every platform it runs on. */
const CLOCK_TICKS = 100;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

// `npx tsx bench/generate.ts [sqlite|postgres …] [--long]`: this bench alone (after `tsc -p tsconfig.build.json`)
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const named = process.argv.slice(2).filter((a): a is Backend => a === 'sqlite' || a === 'postgres');
  const sizes = process.argv.includes('--long') ? GENERATE_SIZES : GENERATE_SHORT;
  for (const backend of named.length ? named : (['sqlite', 'postgres'] as const)) {
    const started = performance.now();
    const result = await benchGenerate(backend, sizes, (line) => console.error(`  ${backend} ${line}`));
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(JSON.stringify({ backend, ...result, seconds: Number(seconds) }));
  }
}
