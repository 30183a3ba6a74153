// Statements per workflow run, per step and per drained task on PostgreSQL: `tsx bench/statements.ts [runs] [inFlight]`.
// Counts every statement the engine's connections send (BEGIN and COMMIT included) while `runs`
// ten-step and one-step runs execute, `inFlight` at a time (the difference is the cost of nine
// steps), then while a worker of concurrency `inFlight` drains 10 × `runs` no-op tasks. Unlike
// throughput on a shared machine, these counts are the same in every session.
import pg from 'pg';
import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';
import { withDatabase } from './databases.js';

const runs = Number(process.argv[2] ?? 50);
const inFlight = Number(process.argv[3] ?? 10);
const counts = new Map<string, number>();
let total = 0;
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const config = args[0] as string | { text?: string; name?: string };
  const text = typeof config === 'string' ? config : (config.name ?? config.text ?? '?');
  const key = text.replace(/\s+/g, ' ').slice(0, 60);
  counts.set(key, (counts.get(key) ?? 0) + 1);
  total += 1;
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

const steps = (n: number) =>
  workflow(`stmts${n}`, async (ctx) => {
    for (let i = 0; i < n; i++) await ctx.step(`s${i}`, async () => i);
    return n;
  });
const ten = steps(10);
const one = steps(1);

async function measure(database: string, wf: typeof ten): Promise<{ total: number; top: Array<[string, number]> }> {
  const engine = await createEngine({ database, workflows: [ten, one], runConcurrency: inFlight });
  try {
    await engine.store.now();
    counts.clear();
    total = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < runs) await (await engine.start(wf, null, { id: `${wf.name}-${next++}` })).result();
      }),
    );
    const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 14);
    return { total, top };
  } finally {
    await engine.close();
  }
}

/** Statements per task of draining `tasks` no-op tasks with one worker of concurrency `inFlight`. */
async function drain(database: string, tasks: number): Promise<{ total: number; top: Array<[string, number]> }> {
  const engine = await createEngine({ database });
  try {
    await engine.queue.enqueueMany(
      'drain',
      Array.from({ length: tasks }, (_, i) => ({ payload: { i } })),
    );
    counts.clear();
    total = 0;
    let completed = 0;
    await new Promise<void>((resolve) => {
      engine.work('drain', async () => null, { concurrency: inFlight, onSettled: (_t, outcome) => outcome === 'completed' && ++completed === tasks && resolve() });
    });
    return { total, top: [...counts].sort((a, b) => b[1] - a[1]).slice(0, 10) };
  } finally {
    await engine.close();
  }
}

await withDatabase('postgres', async (database) => {
  const a = await measure(database, ten);
  const b = await measure(database, one);
  console.log(`10-step: ${(a.total / runs).toFixed(1)} statements/run; 1-step: ${(b.total / runs).toFixed(1)}; per step: ${((a.total - b.total) / runs / 9).toFixed(2)}`);
  for (const [k, n] of a.top) console.log(`  ${(n / runs).toFixed(2)}/run  ${k}`);
  const tasks = runs * 10;
  const d = await drain(database, tasks);
  console.log(`drain of ${tasks} tasks, concurrency ${inFlight}: ${(d.total / tasks).toFixed(2)} statements/task`);
  for (const [k, n] of d.top) console.log(`  ${(n / tasks).toFixed(3)}/task  ${k}`);
});
