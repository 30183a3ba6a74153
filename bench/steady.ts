// Is the product's rate steady as the journal grows? Submits `--executions` stored executions of the
// three-step sample at once (as a client posting them would), runs them in this process with every
// consumer of the product running, and prints how many completed in each `--window` seconds, from
// the start to the end. Not part of `npm run bench` (it runs for minutes at full size):
//   npx tsx bench/steady.ts --executions 10000 [--database postgres] [--window 20]
import { parseArgs } from 'node:util';
import { withDatabase, type Backend } from './databases.js';
import { startProduct } from './product.js';

const { values } = parseArgs({
  options: { executions: { type: 'string' }, database: { type: 'string' }, window: { type: 'string' } },
});
const executions = Number(values.executions ?? 10_000);
const windowMs = Number(values.window ?? 20) * 1000;
const backend = (values.database ?? 'sqlite') as Backend;

await withDatabase(backend, async (database) => {
  const product = await startProduct(database);
  try {
    let done = 0;
    let failed = 0;
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    let completions = (_at: number) => {};
    await product.engine.subscribe(
      'steady.count',
      { types: ['run.completed', 'run.failed', 'run.cancelled'], from: 'end' },
      async (event) => {
        completions(event.timestamp);
        if (event.type !== 'run.completed') failed++;
        if (++done === executions) finish();
      },
    );
    // Windows are counted from completion times, not by a timer: in one process on SQLite the
    // work can keep the event loop busy enough that a timer fires late.
    const started = Date.now();
    const perWindow: number[] = [];
    completions = (at) => {
      const i = Math.floor((at - started) / windowMs);
      while (perWindow.length <= i) {
        if (perWindow.length > 0) print(perWindow.length - 1);
        perWindow.push(0);
      }
      perWindow[i]! += 1;
    };
    let total = 0;
    const print = (i: number) => {
      total += perWindow[i]!;
      console.log(
        `${String(((i + 1) * windowMs) / 1000).padStart(5)} s  completed ${String(total).padStart(6)}  +${perWindow[i]} (${(perWindow[i]! / (windowMs / 1000)).toFixed(1)}/s)`,
      );
    };
    for (let submitted = 0; submitted < executions; submitted++) {
      await product.services.workflows.executions.execute(product.workflowId, {
        trigger_data: { name: `user-${submitted}`, tags: ['a', 'b'] },
      });
    }
    console.log(`all ${executions} submitted after ${((Date.now() - started) / 1000).toFixed(1)} s`);
    await finished;
    const seconds = (Date.now() - started) / 1000;
    print(perWindow.length - 1);
    const full = perWindow.slice(0, -1).map((n) => n / (windowMs / 1000));
    console.log(
      `${backend}: ${done} executions (${failed} not completed) in ${seconds.toFixed(1)} s, ${(done / seconds).toFixed(1)}/s overall` +
        (full.length > 0
          ? `; full windows: min ${Math.min(...full).toFixed(1)}/s, max ${Math.max(...full).toFixed(1)}/s`
          : ''),
    );
  } finally {
    await product.close();
  }
});
