import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';
import Database from 'better-sqlite3';
import { pino } from 'pino';
import { openApp } from '../dist/app/open.js';
import { SAMPLE } from '../dist/cli/sample.js';
import { createApp } from '../dist/server/app.js';

/**
 * What the process holds once it has run many executions and gone idle (issue 49: RSS 239 MB idle
 * after 10,000). Starts the product in process as `runledger serve` does (engine, workers, the HTTP
 * app with metrics) on a temp SQLite file, runs `executions` of the sample stored workflow through
 * the API, `inFlight` at a time, and at 0, half and all of them waits idle (IDLE_MS, 35 s), forces GC twice and
 * records RSS (and its anonymous and file-backed parts), heap and external memory, and writes a heap
 * snapshot beside the database. Writing a snapshot leaves the process larger (malloc keeps what it
 * used): `SNAPSHOTS=0` measures RSS without them. Not run by CI.
 *
 * Measured (2 cores, 20 in flight, 35 s idle, no snapshots, two runs): RSS 95–105 MB at start, 164–170 after
 * 5,000, 130–163 after 10,000; heapUsed 19.5 / 22.2 / 22.3 MB: no growth per execution. RSS is not the JS heap: SQLite's page
 * cache (better-sqlite3 builds with cache_size -16000: 19 MB once the file outgrows it, 5 MB at -2000),
 * the WAL checkpointer's thread (~10 MB, a V8 isolate and a connection), 50 MB of mapped binary, and
 * what glibc keeps of freed memory. A snapshot written in process adds ~75 MB of RSS that stays.
 *
 * npx tsc -p tsconfig.build.json && node --expose-gc --import tsx scripts/heap-after-executions.ts [executions=10000] [inFlight=20]
 * then: node --import tsx scripts/heap-top.ts <dir>/after-5000.heapsnapshot <dir>/after-10000.heapsnapshot
 */
const executions = Number(process.argv[2] ?? 10_000);
const inFlight = Number(process.argv[3] ?? 20);
// past the 30 s that kept run views live (journal/kept.ts): what an idle process holds for good
const IDLE_MS = Number(process.env.IDLE_MS ?? 35_000);
const snapshots = process.env.SNAPSHOTS !== '0';
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const dir = mkdtempSync(join(tmpdir(), 'runledger-heap-'));
const database = join(dir, 'heap.db');
const app = await openApp({
  database,
  secretKey: randomBytes(32),
  workers: true,
  logger: pino({ level: 'info' }, { write: () => undefined }),
});
const http = createApp({
  engine: app.engine,
  workflows: app.workflows,
  channels: app.channels,
  triggers: app.triggers,
  sessions: app.sessions,
  ledger: app.ledger,
  metrics: app.metrics,
  uiDir: null,
});

async function call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await http.fetch(
    new Request(`http://127.0.0.1${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
  );
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
const rows: Record<string, number | string>[] = [];
async function measure(done: number): Promise<void> {
  await sleep(IDLE_MS);
  gc!();
  gc!();
  const m = process.memoryUsage();
  const status = procStatus();
  const snapshot = snapshots ? writeHeapSnapshot(join(dir, `after-${done}.heapsnapshot`)) : '';
  rows.push({
    executions: done,
    rss_mb: mb(m.rss),
    ...status,
    heap_total_mb: mb(m.heapTotal),
    heap_used_mb: mb(m.heapUsed),
    external_mb: mb(m.external),
    array_buffers_mb: mb(m.arrayBuffers),
    snapshot,
  });
  console.log(JSON.stringify(rows.at(-1)));
}

/** RssAnon (malloc'd and V8's heap), RssFile (the node binary and libraries) and the thread count, from Linux's /proc. */
function procStatus(): Record<string, number> {
  let text = '';
  try {
    text = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return {};
  }
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rss_anon_mb: mb(kb('RssAnon') * 1024), rss_file_mb: mb(kb('RssFile') * 1024), threads: kb('Threads') };
}

const wf = await call('POST', '/workflows', SAMPLE);
await measure(0);
let next = 0;
const started = performance.now();
for (const target of [Math.floor(executions / 2), executions]) {
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < target) {
        const i = next++;
        const { execution_id } = await call('POST', `/workflows/${wf.id}/execute`, {
          trigger_data: { name: `user-${i}`, tags: ['a', 'b'] },
        });
        await app.engine.runtime.handle(execution_id as string).result({ pollMs: 50 });
      }
    }),
  );
  await measure(target);
}
const seconds = (performance.now() - started) / 1000;

// the engine's connection keeps SQLite's default page cache unless told otherwise: read what a fresh connection gets
const db = new Database(database, { readonly: true });
const sqlite = {
  cache_size: db.pragma('cache_size', { simple: true }),
  page_size: db.pragma('page_size', { simple: true }),
  page_count: db.pragma('page_count', { simple: true }),
};
db.close();
await app.close();
const result = { executions, inFlight, seconds: Math.round(seconds), dir, sqlite, rows };
writeFileSync(join(dir, 'result.json'), JSON.stringify(result, null, 2));
console.log(JSON.stringify({ ...result, rows: undefined }));
