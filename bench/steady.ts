// Is the product's rate steady as the journal grows? (issue 48's `steady_ratio`) Submits `executions` stored
// executions of the three-step sample and `runs` one-step code runs at once, as clients posting them would, runs them
// in this process with every consumer of the product running, and counts completions per window from the first to
// the last. `npm run bench` runs it at 2,000 + 10,000 (10,000 + 100,000 with --long); alone, printing each window:
//   npx tsx bench/steady.ts [sqlite|postgres] [--executions 10000] [--runs 100000] [--window 20]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { workflow } from '../dist/runtime/workflow.js';
import { withDatabase, type Backend } from './databases.js';
import { startProduct } from './product.js';

export interface SteadySizes {
  executions: number;
  runs: number;
  /** Completions are counted per window of this many ms. */
  windowMs: number;
}

export const STEADY_SHORT: SteadySizes = { executions: 2_000, runs: 10_000, windowMs: 2_000 };
export const STEADY_LONG: SteadySizes = { executions: 10_000, runs: 100_000, windowMs: 10_000 };

const one = workflow('bench.steady1', async (ctx, n: number) => ctx.step('s', async () => n));

/**
 * `steady_ratio`: completions per second in the last quarter of the time from the first submission to the last
 * completion, over the first quarter's (≥ 0.9: no decline as the journal and the tables grow); `steady_per_s` is the
 * whole rate. A quarter is counted from completion times, not a timer (a busy event loop fires timers late).
 */
export async function benchSteady(
  backend: Backend,
  sizes: SteadySizes,
  log: (line: string) => void = () => {},
): Promise<Record<string, number>> {
  return withDatabase(backend, async (database) => {
    const product = await startProduct(database);
    product.engine.register(one);
    try {
      const total = sizes.executions + sizes.runs;
      const ends: number[] = [];
      let failed = 0;
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      await product.engine.subscribe(
        'steady.count',
        { types: ['run.completed', 'run.failed', 'run.cancelled'], from: 'end' },
        async (event) => {
          ends.push(Date.now());
          if (event.type !== 'run.completed') failed++;
          if (ends.length === total) finish();
        },
      );
      const started = Date.now();
      // the two kinds interleaved, 100 submissions at a time: one stored execution per `runs / executions` code runs
      const every = Math.max(1, Math.round(sizes.runs / Math.max(1, sizes.executions)));
      let executions = 0;
      let runs = 0;
      const submit = async (i: number) => {
        if (executions < sizes.executions && (i % (every + 1) === 0 || runs >= sizes.runs)) {
          executions++;
          await product.services.workflows.executions.execute(product.workflowId, {
            trigger_data: { name: `user-${i}`, tags: ['a', 'b'] },
          });
        } else {
          runs++;
          await product.engine.start(one, i);
        }
      };
      for (let i = 0; i < total; i += 100)
        await Promise.all(Array.from({ length: Math.min(100, total - i) }, (_, j) => submit(i + j)));
      log(`all ${total} submitted after ${((Date.now() - started) / 1000).toFixed(1)} s`);
      await finished;
      const span = ends.at(-1)! - started;
      const windows = new Array<number>(Math.max(1, Math.ceil(span / sizes.windowMs))).fill(0);
      for (const at of ends) windows[Math.min(windows.length - 1, Math.floor((at - started) / sizes.windowMs))]! += 1;
      log(`completions per ${sizes.windowMs / 1000} s window: ${windows.join(' ')} (${failed} not completed)`);
      const quarter = (q: number) => ends.filter((at) => Math.floor(((at - started) / (span + 1)) * 4) === q).length;
      return {
        steady_ratio: Math.round((quarter(3) / Math.max(1, quarter(0))) * 100) / 100,
        steady_per_s: Math.round(total / (span / 1000)),
      };
    } finally {
      await product.close();
    }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { executions: { type: 'string' }, runs: { type: 'string' }, window: { type: 'string' } },
  });
  const backend = (positionals[0] ?? 'sqlite') as Backend;
  const sizes: SteadySizes = {
    executions: Number(values.executions ?? STEADY_SHORT.executions),
    runs: Number(values.runs ?? STEADY_SHORT.runs),
    windowMs: Number(values.window ?? STEADY_SHORT.windowMs / 1000) * 1000,
  };
  const result = await benchSteady(backend, sizes, (line) => console.error(`  ${backend} ${line}`));
  console.log(JSON.stringify({ backend, ...result }));
}
