import { appendFileSync } from 'node:fs';
import { workflow } from '../src/runtime/workflow.js';

/**
 * The debounced workflow of the debounce crash test, the same code in the child and the parent: its one step appends a
 * line to `log` synchronously, so the parent counts its executions across the kill.
 */
export const debouncedEcho = (log: string, period = '4s') =>
  workflow(
    'debounce-crash',
    { version: '1', debounce: { key: 'input.chat', period } },
    async (ctx, input: { chat: string; n: number }) =>
      ctx.step('echo', async () => {
        appendFileSync(log, `${ctx.runId} echo ${input.n} ${process.pid}\n`);
        return input.n;
      }),
  );
