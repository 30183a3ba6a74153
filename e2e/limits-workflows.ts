import { workflow } from '../src/runtime/workflow.js';

/**
 * The limits crash test's workflow: at most 2 runs of one key `k` in flight. A run is a step, a sleep and a step, so
 * a killed process leaves runs between steps holding their slots, and others mid-step.
 */
export const limited = workflow(
  'limits-crash',
  { concurrency: [{ key: 'input.k', limit: 2 }] },
  async (ctx, input: { k: string; n: number }) => {
    await ctx.step('work', () => new Promise((resolve) => setTimeout(() => resolve(input.n), 150)));
    await ctx.sleep('pause', '100ms');
    return ctx.step('done', async () => input.n);
  },
);
