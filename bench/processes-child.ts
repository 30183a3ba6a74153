// A worker process of the processes benchmark: `node --import tsx bench/processes-child.ts <database>`. It opens its
// engine with the 10-step workflow (its run worker, concurrency 10, claims at once) and says "ready"; on "stop" it
// closes and exits.
import { createEngine, engineStore } from '../dist/engine.js';
import { workflow } from '../dist/runtime/workflow.js';

/** The 10-step no-op workflow, as bench/workflows.ts has it. */
export const TEN = workflow('bench.procs10', async (ctx) => {
  let last = 0;
  for (let i = 0; i < 10; i++) last = await ctx.step(`s${i}`, async () => i);
  return last;
});

if (process.argv[1]?.endsWith('processes-child.ts')) {
  const [database] = process.argv.slice(2);
  if (!database || !process.send) throw new Error('usage: node --import tsx bench/processes-child.ts <database> (IPC)');
  const send = process.send.bind(process);
  const engine = await createEngine({ database, workflows: [TEN] });
  await engineStore(engine).now();
  process.on('message', async (message) => {
    if (message !== 'stop') return;
    await engine.close();
    process.exit(0);
  });
  send('ready');
}
