import { appendFileSync } from 'node:fs';
import { workflow } from '../src/runtime/workflow.js';

/**
 * The batched workflow of the batching crash test, the same code in the child and the parent: batches of up to 10
 * inputs, `timeout` after a batch's first; its one step appends a line to `log` synchronously, so the parent counts
 * its executions across the kill.
 */
export const batchedEcho = (log: string, timeout = '30s') =>
  workflow(
    'batching-crash',
    { version: '1', batch: { maxSize: 10, timeout } },
    async (ctx, inputs: Array<{ n: number }>) =>
      ctx.step('echo', async () => {
        appendFileSync(log, `${ctx.runId} echo ${inputs.map((i) => i.n).join(',')} ${process.pid}\n`);
        return inputs.map((i) => i.n);
      }),
  );
