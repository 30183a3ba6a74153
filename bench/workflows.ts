import { createEngine, type Engine } from '../dist/engine.js';
import { workflow, type Workflow } from '../dist/runtime/workflow.js';
import { perSecond } from './journal.js';

interface Bench {
  wf: Workflow<null, number>;
  steps: number;
}

/** A workflow of `steps` no-op steps, each journaled as any step is (started, completed). */
function noOpSteps(steps: number): Bench {
  const wf = workflow(`bench.steps${steps}`, async (ctx) => {
    let last = 0;
    for (let i = 0; i < steps; i++) last = await ctx.step(`s${i}`, async () => i);
    return last;
  });
  return { wf, steps };
}

const TEN = noOpSteps(10);
const ONE = noOpSteps(1);

export interface WorkflowSizes {
  /** Runs of each concurrent measurement, unless the budget runs out first. */
  runs: number;
  inFlight: number;
  /** A concurrent measurement starts no new run after this long; the runs it did finish are its count. */
  budgetMs: number;
  /** Runs of each sequential (1 in flight) measurement, after `warmup` uncounted ones. */
  sequentialRuns: number;
  warmup: number;
  /** Runs in flight of the high-concurrency 10-step measurement (`wf10_100_per_s`), on an engine with as many run workers. */
  wideInFlight: number;
}

export interface WorkflowResults {
  metrics: Record<string, number>;
  /** The runs each concurrent measurement finished: below `sizes.runs` when the budget ran out. */
  runs: { wf10: number; wf1: number; wf10_100: number };
}

/**
 * Durable workflow runs through the engine's own run workers (concurrency 10, in this process) on
 * `database`: the 1-step and the 10-step workflow one run at a time, whose p50 difference is the
 * marginal cost of a step without queueing in it; then both with `inFlight` runs at a time.
 */
export async function benchWorkflows(
  database: string,
  sizes: WorkflowSizes,
  log: (line: string) => void,
): Promise<WorkflowResults> {
  const engine = await createEngine({ database, workflows: [TEN.wf, ONE.wf] });
  try {
    const timed = async <T>(name: string, measure: () => Promise<T>): Promise<T> => {
      const started = performance.now();
      const result = await measure();
      log(`${name} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
      return result;
    };
    await sequential(engine, ONE, 'warm', sizes.warmup);
    const seq1 = await timed('sequential 1-step runs', () => sequential(engine, ONE, 'seq1', sizes.sequentialRuns));
    const seq10 = await timed('sequential 10-step runs', () => sequential(engine, TEN, 'seq10', sizes.sequentialRuns));
    const wf10 = await timed('10-step runs, 10 in flight', () => concurrent(engine, TEN, 'wf10', sizes));
    const wf1 = await timed('1-step runs, 10 in flight', () => concurrent(engine, ONE, 'wf1', sizes));
    const mean10 = wf10.latencies.reduce((a, b) => a + b, 0) / wf10.latencies.length;
    const wide = await timed(`10-step runs, ${sizes.wideInFlight} in flight`, () => benchWide(database, sizes));
    return {
      metrics: {
        wf10_per_s: wf10.perSecond,
        wf10_100_per_s: wide.perSecond,
        wf10_100_p50_ms: percentile(wide.latencies, 0.5),
        steps_per_s: 10 * wf10.perSecond,
        wf10_p50_ms: percentile(wf10.latencies, 0.5),
        wf10_p99_ms: percentile(wf10.latencies, 0.99),
        // a step's share of a run's latency, start and completion included, as comparisons count it
        step_ms: mean10 / 10,
        wf1_per_s: wf1.perSecond,
        step_marginal_ms: (percentile(seq10, 0.5) - percentile(seq1, 0.5)) / 9,
      },
      runs: { wf10: wf10.latencies.length, wf1: wf1.latencies.length, wf10_100: wide.latencies.length },
    };
  } finally {
    await engine.close();
  }
}

/**
 * The 10-step runs with `wideInFlight` at a time, on an engine of as many run workers (and
 * connections): where group commit shows, one commit carrying the steps of many runs.
 */
async function benchWide(database: string, sizes: WorkflowSizes): Promise<{ perSecond: number; latencies: number[] }> {
  const engine = await createEngine({ database, workflows: [TEN.wf], runConcurrency: sizes.wideInFlight });
  try {
    return await concurrent(engine, TEN, 'wf10w', { ...sizes, inFlight: sizes.wideInFlight });
  } finally {
    await engine.close();
  }
}

/** Start → result milliseconds of one run, which must return its last step's output. */
async function runOnce(engine: Engine, bench: Bench, id: string): Promise<number> {
  const started = performance.now();
  const run = await engine.start(bench.wf, null, { id });
  const output = await run.result();
  const elapsed = performance.now() - started;
  if (output !== bench.steps - 1) throw new Error(`run ${id} returned ${output}, expected ${bench.steps - 1}`);
  return elapsed;
}

/** Sorted latencies of `count` runs, each started when the previous one ended. */
async function sequential(engine: Engine, bench: Bench, prefix: string, count: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) latencies.push(await runOnce(engine, bench, `${prefix}-${i}`));
  return latencies.sort((a, b) => a - b);
}

/**
 * `sizes.inFlight` loops, each starting a run when its last one ended, until `sizes.runs` were
 * started or the budget ran out; runs per second from the first start to the last result.
 */
async function concurrent(
  engine: Engine,
  bench: Bench,
  prefix: string,
  sizes: WorkflowSizes,
): Promise<{ perSecond: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: sizes.inFlight }, async () => {
      while (next < sizes.runs && performance.now() - start < sizes.budgetMs) {
        latencies.push(await runOnce(engine, bench, `${prefix}-${next++}`));
      }
    }),
  );
  return { perSecond: perSecond(latencies.length, start), latencies: latencies.sort((a, b) => a - b) };
}

/** Nearest-rank percentile of sorted samples. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}
