import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * A module of code workflows for `runledger serve --workflows` in the dashboard's tests, written
 * as plain JavaScript against the built package (the server runs from dist/, without tsx):
 * `nap` sleeps for an hour after one step, `broken` fails its step for good, `showcase` (for the
 * screenshots) retries a step, sleeps, waits for a signal until its timeout and starts a child run.
 */
export function uiWorkflowsModule(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'rl-ui-wf-')), 'workflows.mjs');
  writeFileSync(
    file,
    `import { workflow, TerminalError } from '${resolve('dist/index.js')}';
export const nap = workflow('nap', async (ctx) => {
  await ctx.step('prepare', async () => ({ ready: true }));
  await ctx.sleep('nap', '1h');
  return 'rested';
});
export const broken = workflow('broken', async (ctx) => {
  await ctx.step('charge', async () => { throw new TerminalError('card declined: insufficient funds'); });
});
export const pack = workflow('pack', async (ctx, input) => ctx.step('box', async () => { await new Promise((r) => setTimeout(r, 300)); return { boxes: input.items }; }));
export const showcase = workflow('showcase', async (ctx, input) => {
  const order = await ctx.step('fetch-order', async ({ attempt }) => {
    await new Promise((r) => setTimeout(r, 200));
    if (attempt < 3) throw new Error('upstream answered 503 (attempt ' + attempt + ')');
    return { id: input.order, items: 3 };
  }, { retry: { maxAttempts: 5, backoff: { base: '400ms', factor: 2 } } });
  await ctx.step('reserve-stock', async () => { await new Promise((r) => setTimeout(r, 400)); return { reserved: true }; });
  await ctx.sleep('cool-down', '1s');
  const approval = await ctx.waitForEvent('approval', { timeout: '1s' });
  const packed = await ctx.child(pack, { items: order.items });
  await ctx.step('ship', async () => { await new Promise((r) => setTimeout(r, 250)); return { tracking: 'TRK-' + order.id, approval, packed }; });
  return { shipped: true };
});
`,
  );
  return file;
}
