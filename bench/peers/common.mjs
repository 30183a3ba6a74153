// Shared helpers for the peer benchmarks: fresh database, timing, percentiles.
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

// the server runledger's tests and benchmarks use (its database part is replaced)
const ADMIN_URL = process.env.RUNLEDGER_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const PG_BASE = ADMIN_URL.replace(/\/[^/]*$/, '');
export const SIZE = Number(process.argv[2] ?? 20000); // jobs (or workflow runs)
export const CHUNK = 5000; // bulk enqueue chunk
export const LAT_JOBS = Number(process.argv[3] ?? 300); // latency samples
export const LAT_WARMUP = 10;
export const LAT_GAP_MS = 20;

export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const rand = () => randomBytes(4).toString('hex');
export const round = (x, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

// nearest-rank percentile
export function pct(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((p / 100) * s.length) - 1)];
}

async function admin(sql) {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

// Create peer_<lib>_<random>, run fn(url, name), always drop it afterwards.
export async function withFreshDb(lib, fn) {
  const name = `peer_${lib}_${rand()}`;
  await admin(`CREATE DATABASE ${name}`);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  };
  const onSignal = (sig) => drop().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await fn(`${PG_BASE}/${name}`, name);
  } finally {
    await drop();
  }
}

// Poll until check() is true; returns the time it first was. Used to detect
// that completions are committed in the database (not just handled in memory).
export async function waitUntil(check, everyMs = 5, timeoutMs = 3_600_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('waitUntil: timeout');
    await sleep(everyMs);
  }
  return now();
}

// Enqueue LAT_WARMUP + LAT_JOBS single jobs, one every LAT_GAP_MS, each carrying
// the time taken just before the enqueue call. `samples` is filled by the handler
// (index -> latency ms). Returns {p50, p99} over the non-warm-up jobs.
export async function latencyRun(enqueueOne, samples) {
  const total = LAT_WARMUP + LAT_JOBS;
  const t0 = now();
  for (let i = 0; i < total; i++) {
    const wait = t0 + i * LAT_GAP_MS - now();
    if (wait > 0) await sleep(wait);
    await enqueueOne({ i, t: now() });
  }
  await waitUntil(() => samples.size >= total, 5, 60_000);
  const vals = [...samples].filter(([i]) => i >= LAT_WARMUP).map(([, v]) => v);
  return { latency_p50_ms: round(pct(vals, 50), 2), latency_p99_ms: round(pct(vals, 99), 2) };
}

export function chunks(n, size = CHUNK) {
  const out = [];
  for (let i = 0; i < n; i += size) out.push(Math.min(size, n - i));
  return out;
}

// installed version of a package (read from node_modules, unaffected by "exports")
export const versionOf = (pkg) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
