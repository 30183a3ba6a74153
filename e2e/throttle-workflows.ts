import { appendFileSync } from 'node:fs';
import { workflow } from '../src/runtime/workflow.js';

/**
 * The throttled workflow of the throttle crash test, the same code in the child and the parent: at most 2 starts per
 * 2 s of a user (one a second); its one step appends a line to `log` synchronously, so the parent counts its executions
 * across the kill.
 */
export const throttledEcho = (log: string) =>
  workflow(
    'throttle-crash',
    { version: '1', throttle: { key: 'input.user', limit: 2, period: '2s' } },
    async (ctx, input: { user: string; n: number }) =>
      ctx.step('echo', async () => {
        appendFileSync(log, `ran ${ctx.runId} ${input.n} ${process.pid}\n`);
        return input.n;
      }),
  );
