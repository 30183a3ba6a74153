import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';
import { withDatabase } from './databases.js';
const TEN = workflow('p.ten', async (ctx) => {
  let last = 0;
  for (let i = 0; i < 10; i++) last = await ctx.step(`s${i}`, async () => i);
  return last;
});
const backend = (process.argv[2] ?? 'sqlite') as 'sqlite';
const RUNS = Number(process.argv[3] ?? 1500);
await withDatabase(backend, async (database) => {
  const engine = await createEngine({ database, workflows: [TEN], runConcurrency: 10 });
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (next < RUNS) await (await engine.start(TEN, null, { id: `r-${next++}` })).result();
    }),
  );
  console.log(backend, 'wf10/s', (RUNS / ((performance.now() - start) / 1000)).toFixed(0));
  await engine.close();
});
