import { appendFileSync } from 'node:fs';
import { workflow } from '../src/runtime/workflow.js';

/** One step that holds for 3 s, then logs which process finished it and returns that pid. */
export const slow = (log: string) =>
  workflow('slow', async (ctx) =>
    ctx.step(
      'work',
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 3000));
        appendFileSync(log, `${process.pid} finished work\n`);
        return process.pid;
      },
      { retry: { maxAttempts: 5, backoff: { base: '10ms' } } },
    ),
  );
