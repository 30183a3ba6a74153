// What a run, a step, a task and an event cost PostgreSQL, measured on a cluster of its own (issue 48):
// `tsx bench/db-cost.ts [runs]`. Nothing else writes to that cluster, so its WAL bytes are ours alone, and
// its server processes' CPU time (user + system, from /proc, every backend and background process the
// cluster has) is the work our statements gave it. Unlike throughput, neither depends much on what else the
// machine runs: CPU time is time on a core, not time waited. A reader divides a database's cores by these
// to bound what it carries (docs/scaling.md). The engine runs in this process: its CPU is reported apart.
// fsync is off on the cluster (as in the tests that own one): the WAL written is the same, its flush wait is
// not CPU.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { createEngine, type Engine } from '../dist/engine.js';
import { workflow } from '../dist/runtime/workflow.js';
import { throwawayPostgres } from '../e2e/throwaway-postgres.js';

const steps = (n: number) =>
  workflow(`cost${n}`, async (ctx) => {
    for (let i = 0; i < n; i++) await ctx.step(`s${i}`, async () => i);
    return n;
  });
const ten = steps(10);
const one = steps(1);
const IN_FLIGHT = 10;

/** One operation's cost: WAL bytes, the database's CPU ms and this process's (the engine's) CPU ms. */
export interface Cost {
  walBytes: number;
  serverCpuMs: number;
  clientCpuMs: number;
}

const TICK_MS = 1000 / 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s

/** CPU ms each of the cluster's processes has used so far, by pid (those gone since are not in it). */
async function serverCpu(admin: pg.Client): Promise<Map<number, number>> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity');
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      // fields after the command's closing parenthesis: utime and stime are the 12th and 13th
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // ended between the query and the read
    }
  }
  return cpu;
}

const walAt = async (admin: pg.Client) =>
  BigInt(
    (await admin.query<{ at: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0') AS at")).rows[0]!.at,
  );

/** The cost of `fn` doing `count` operations, per operation. */
async function costOf(admin: pg.Client, count: number, fn: () => Promise<void>): Promise<Cost> {
  const wal = await walAt(admin);
  const before = await serverCpu(admin);
  const client = process.cpuUsage();
  await fn();
  const clientUsed = process.cpuUsage(client);
  const after = await serverCpu(admin);
  const walBytes = Number((await walAt(admin)) - wal);
  let server = 0;
  for (const [pid, ms] of after) server += ms - (before.get(pid) ?? 0);
  return {
    walBytes: walBytes / count,
    serverCpuMs: server / count,
    clientCpuMs: (clientUsed.user + clientUsed.system) / 1000 / count,
  };
}

let started = 0;

async function runs(engine: Engine, wf: typeof ten, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < count) await (await engine.start(wf, {}, { id: `${wf.name}-${started++}` })).result();
    }),
  );
}

async function drain(engine: Engine, count: number): Promise<void> {
  let completed = 0;
  await new Promise<void>((resolve) => {
    engine.work('cost-drain', async () => null, {
      concurrency: IN_FLIGHT,
      onSettled: (_t, outcome) => outcome === 'completed' && ++completed === count && resolve(),
    });
  });
}

async function appends(engine: Engine, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) await engine.journal.append(`cost-${next++}`, [{ type: 'cost.event', data: { n: next } }]);
    }),
  );
}

export interface DbCost {
  wf1Run: Cost;
  wf10Run: Cost;
  /** (a 10-step run − a 1-step run) / 9. */
  step: Cost;
  /** A no-op task enqueued in bulk (chunks of 1,000). */
  enqueue: Cost;
  /** Claiming, running and completing a no-op task, `IN_FLIGHT` at a time. */
  task: Cost;
  /** One event appended to a stream of its own, `IN_FLIGHT` at a time. */
  event: Cost;
}

/**
 * Where a 1-step run's WAL goes, by record type and relation (pg_walinspect), per run: which tables and indexes a
 * run writes, and how often.
 */
async function walByRelation(admin: pg.Client, url: string, count: number, fn: () => Promise<void>): Promise<string[]> {
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  const lsn = async () => (await admin.query<{ l: string }>('SELECT pg_current_wal_insert_lsn() AS l')).rows[0]!.l;
  const from = await lsn();
  await fn();
  const to = await lsn();
  // pg_walinspect reads only what is flushed: wait for the WAL writer to pass the end
  while (
    (await admin.query<{ ok: boolean }>('SELECT pg_current_wal_flush_lsn() >= $1 AS ok', [to])).rows[0]!.ok !== true
  )
    await new Promise((resolve) => setTimeout(resolve, 50));
  const { rows } = await admin.query<{ t: string; length: number; ref: string | null }>(
    `SELECT resource_manager || '/' || record_type AS t, record_length AS length, block_ref AS ref
     FROM pg_get_wal_records_info($1, $2)`,
    [from, to],
  );
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const names = new Map(
    (
      await db.query<{ f: string; name: string }>('SELECT relfilenode::text AS f, relname AS name FROM pg_class')
    ).rows.map((r) => [r.f, r.name]),
  );
  await db.end();
  const by = new Map<string, { n: number; bytes: number }>();
  for (const r of rows) {
    const file = /rel \d+\/\d+\/(\d+)/.exec(r.ref ?? '')?.[1];
    const key = `${r.t} ${file === undefined ? '-' : (names.get(file) ?? file)}`;
    const sum = by.get(key) ?? { n: 0, bytes: 0 };
    sum.n += 1;
    sum.bytes += r.length;
    by.set(key, sum);
  }
  return [...by]
    .sort((a, b) => b[1].bytes - a[1].bytes)
    .map(
      ([key, { n, bytes }]) =>
        `${key.padEnd(56)} ${(n / count).toFixed(2).padStart(6)} records ${Math.round(bytes / count)} bytes`,
    );
}

/** On a throwaway cluster: each operation's cost, the engine warmed up first; `wal`: the 1-step run's WAL by relation. */
export async function measureDbCost(count = 500, o: { wal?: boolean } = {}): Promise<DbCost & { wal?: string[] }> {
  const cluster = await throwawayPostgres();
  const admin = new pg.Client({ connectionString: cluster.url });
  try {
    await admin.connect();
    await admin.query('CREATE DATABASE cost');
    const url = cluster.url.replace(/\/postgres$/, '/cost');
    const engine = await createEngine({ database: url, workflows: [ten, one] });
    try {
      // prepared statements, pools, caches and the pages a checkpoint's full-page images cover in place first
      await runs(engine, one, count);
      await runs(engine, ten, count / 5);
      const wf1Run = await costOf(admin, count, () => runs(engine, one, count));
      const wf10Run = await costOf(admin, count / 5, () => runs(engine, ten, count / 5));
      const tasks = count * 10;
      const enqueue = await costOf(admin, tasks, async () => {
        for (let i = 0; i < tasks; i += 1000)
          await engine.queue.enqueueMany(
            'cost-drain',
            Array.from({ length: Math.min(1000, tasks - i) }, (_, j) => ({ payload: { i: i + j } })),
          );
      });
      const task = await costOf(admin, tasks, () => drain(engine, tasks));
      const event = await costOf(admin, tasks, () => appends(engine, tasks));
      const per9 = (k: keyof Cost) => (wf10Run[k] - wf1Run[k]) / 9;
      const step = { walBytes: per9('walBytes'), serverCpuMs: per9('serverCpuMs'), clientCpuMs: per9('clientCpuMs') };
      const wal = o.wal ? await walByRelation(admin, url, count, () => runs(engine, one, count)) : undefined;
      return { wf1Run, wf10Run, step, enqueue, task, event, ...(wal ? { wal } : {}) };
    } finally {
      await engine.close();
    }
  } finally {
    await admin.end().catch(() => {});
    cluster.remove();
  }
}

/** The bench keys: `wal_bytes_per_…`, `server_cpu_ms_per_…`, `engine_cpu_ms_per_…`. */
export function costKeys(c: DbCost): Record<string, number> {
  const keys: Record<string, number> = {};
  const names = {
    wf1Run: 'wf1_run',
    wf10Run: 'wf10_run',
    step: 'step',
    enqueue: 'enqueue',
    task: 'task',
    event: 'event',
  };
  for (const [part, name] of Object.entries(names)) {
    const cost = c[part as keyof DbCost];
    keys[`wal_bytes_per_${name}`] = Math.round(cost.walBytes);
    keys[`server_cpu_ms_per_${name}`] = Math.round(cost.serverCpuMs * 1000) / 1000;
    keys[`engine_cpu_ms_per_${name}`] = Math.round(cost.clientCpuMs * 1000) / 1000;
  }
  return keys;
}

// `tsx bench/db-cost.ts [runs] [--wal]`: the keys, and with --wal where a 1-step run's WAL goes
if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const args = process.argv.slice(2);
  const cost = await measureDbCost(Number(args.find((a) => /^\d+$/.test(a)) ?? 500), { wal: args.includes('--wal') });
  for (const [k, v] of Object.entries(costKeys(cost))) console.log(`${k.padEnd(28)} ${v}`);
  if (cost.wal) console.log(`a 1-step run's WAL, per run:\n  ${cost.wal.slice(0, 30).join('\n  ')}`);
}
