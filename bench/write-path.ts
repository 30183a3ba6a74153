// The write path's keys at a chosen size, quickly, for before/after comparisons in one session:
// `tsx bench/write-path.ts [--only sqlite|postgres] [--runs 200] [--tasks 5000]`. Self-contained (the
// engine's public API only), so the same file runs against an older checkout. `npm run bench`
// measures the same keys at full size.
import { parseArgs } from 'node:util';
import { createEngine, type Engine } from '../dist/engine.js';
import { workflow, type Workflow } from '../dist/runtime/workflow.js';
import { withDatabase, type Backend } from './databases.js';

const { values } = parseArgs({
  options: { only: { type: 'string' }, runs: { type: 'string' }, tasks: { type: 'string' }, skip: { type: 'string' } },
});
/** `--skip workflows` or `--skip queue`: measure only the other half. */
const skip = new Set((values.skip ?? '').split(','));
const RUNS = Number(values.runs ?? 200);
const TASKS = Number(values.tasks ?? 5000);
const backends: Backend[] = values.only ? [values.only as Backend] : ['sqlite', 'postgres'];

const steps = (n: number): Workflow<null, number> =>
  workflow(`wp.steps${n}`, async (ctx) => {
    let last = 0;
    for (let i = 0; i < n; i++) last = await ctx.step(`s${i}`, async () => i);
    return last;
  });
const TEN = steps(10);
const ONE = steps(1);

async function runs(
  engine: Engine,
  wf: Workflow<null, number>,
  prefix: string,
  count: number,
  inFlight: number,
): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < count) await (await engine.start(wf, null, { id: `${prefix}-${next++}` })).result();
    }),
  );
  return count / ((performance.now() - start) / 1000);
}

async function workflows(database: string, inFlight: number, wf: Workflow<null, number>): Promise<number> {
  const engine = await createEngine({ database, workflows: [TEN, ONE], runConcurrency: inFlight });
  try {
    await runs(engine, wf, 'warm', 5, 1);
    return await runs(engine, wf, `m${inFlight}`, RUNS, inFlight);
  } finally {
    await engine.close();
  }
}

async function queue(database: string, concurrency: number): Promise<{ enqueue: number; drain: number }> {
  const engine = await createEngine({ database });
  try {
    let start = performance.now();
    for (let from = 0; from < TASKS; from += 1000)
      await engine.queue.enqueueMany(
        'q',
        Array.from({ length: Math.min(1000, TASKS - from) }, (_, i) => ({ payload: { i: from + i } })),
      );
    const enqueue = TASKS / ((performance.now() - start) / 1000);
    let completed = 0;
    let done!: () => void;
    const drained = new Promise<void>((resolve) => (done = resolve));
    start = performance.now();
    engine.work('q', async () => null, {
      concurrency,
      onSettled: (_t, outcome) => outcome === 'completed' && ++completed === TASKS && done(),
    });
    await drained;
    return { enqueue, drain: TASKS / ((performance.now() - start) / 1000) };
  } finally {
    await engine.close();
  }
}

for (const backend of backends) {
  const m: Record<string, number> = {};
  if (!skip.has('workflows')) {
    m.wf10_per_s = await withDatabase(backend, (db) => workflows(db, 10, TEN));
    m.wf10_100_per_s = await withDatabase(backend, (db) => workflows(db, 100, TEN));
    m.wf1_per_s = await withDatabase(backend, (db) => workflows(db, 10, ONE));
  }
  if (!skip.has('queue')) {
    const q10 = await withDatabase(backend, (db) => queue(db, 10));
    const q50 = await withDatabase(backend, (db) => queue(db, 50));
    Object.assign(m, { bulk_enqueue_per_s: q10.enqueue, drain_per_s: q10.drain, drain_c50_per_s: q50.drain });
  }
  console.log(backend, JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, Math.round(v)]))));
}
