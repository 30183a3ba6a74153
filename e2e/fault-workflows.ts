import { appendFileSync } from 'node:fs';
import { workflow } from '../src/runtime/workflow.js';

/**
 * The workflows of the fault tests. Every side effect appends a line to `log` synchronously, so
 * the parent counts executions across SIGKILLs; each line names the process that wrote it.
 */
export const faultWorkflows = (log: string) => {
  const record = (line: string) => appendFileSync(log, `${line} ${process.pid}\n`);

  /** Five steps of 40 ms each (so a kill lands mid-step often); the result is n + 15. */
  const five = workflow('five', async (ctx, input: { n: number }) => {
    let total = input.n;
    for (let i = 1; i <= 5; i++) {
      total = await ctx.step(`add-${i}`, async () => {
        record(`${ctx.runId} add-${i}`);
        await new Promise((resolve) => setTimeout(resolve, 40));
        return total + i;
      });
    }
    return total;
  });

  /** A durable 5 s sleep; the code after it logs the wall-clock time it woke at. */
  const nap = workflow('nap', async (ctx) => {
    const t0 = await ctx.now();
    await ctx.sleep('nap', '5s');
    record(`${ctx.runId} woke ${Date.now()}`);
    return t0;
  });

  /** A completed step with a compensation, then a step that holds until its signal fires or `ms` (default 30 s) pass. */
  const hold = workflow('hold', async (ctx, input: { ms?: number }) => {
    await ctx.step('reserve', async () => 'reserved', { compensate: async () => record(`${ctx.runId} compensated`) });
    const ms = input.ms ?? 30_000;
    return ctx.step(
      'hold',
      ({ signal }) =>
        new Promise<string>((resolve, reject) => {
          const timer = setTimeout(() => resolve(`held ${ms} ms`), ms);
          signal.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(signal.reason);
          });
        }),
    );
  });

  return { five, nap, hold };
};

/** The log's lines, split into words. */
export function logLines(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split(' '));
}
