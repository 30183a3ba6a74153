import { workflow } from '../src/runtime/workflow.js';

/**
 * Two deploys of one workflow for the versioning test: v2 adds a step before the sleep, so a v1
 * run replayed on v2's code would meet a NonDeterminismError at its second call. Both keep the
 * default version (a hash of their source), so they differ without anyone bumping a number.
 */
export const orderV1 = workflow('order', async (ctx, input: { n: number }) => {
  const charged = await ctx.step('charge', async () => input.n * 10);
  await ctx.sleep('settle', '1500ms');
  return ctx.step('ship', async () => ({ shipped: `v1:${charged}`, pid: process.pid }));
});

export const orderV2 = workflow('order', async (ctx, input: { n: number }) => {
  const charged = await ctx.step('charge', async () => input.n * 10);
  const safe = await ctx.step('fraud-check', async () => input.n % 2 === 0);
  await ctx.sleep('settle', '1500ms');
  return ctx.step('ship', async () => ({ shipped: `v2:${charged}:${safe}`, pid: process.pid }));
});
