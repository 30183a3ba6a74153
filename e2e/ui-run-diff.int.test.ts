import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './child.js';
import { call, useDashboard } from './dashboard.js';

/**
 * The run diff (issue 47) in a real browser against `runledger serve` (needs `npm run build`): a failed run retried
 * once its card is fixed; the retry's page links to "compare with the original", which shows the two runs side by
 * side, the changed charge and the added ship step highlighted; `runledger runs diff --url` prints the same.
 */

const folder = mkdtempSync(join(tmpdir(), 'rl-diff-'));
/** While this file exists the card is declined: the first run fails, its retry (after the test removes it) does not. */
const declined = join(folder, 'declined');
const module = join(folder, 'workflows.mjs');
writeFileSync(declined, '');
writeFileSync(
  module,
  `import { existsSync } from 'node:fs';
import { workflow, TerminalError } from '${resolve('dist/index.js')}';
export const checkout = workflow('checkout', async (ctx, input) => {
  await ctx.step('load', async () => ({ order: input.order, items: 2 }));
  const receipt = await ctx.step('charge', async () => {
    if (existsSync(${JSON.stringify(declined)})) throw new TerminalError('card declined');
    return { receipt: 'r-' + input.order };
  });
  await ctx.step('ship', async () => ({ shipped: true }));
  return receipt;
});
`,
);

describe('the run diff page', () => {
  const ui = useDashboard(['--workflows', module]);

  it('links a retry to its original and shows the two side by side, what differs highlighted', async () => {
    const { server, page } = ui;
    const original = (await call(server, '/runs', { workflow: 'checkout', input: { order: 7 } })).run_id as string;
    expect((await call(server, `/runs/${original}/wait?timeout=20s`)).run.status).toBe('failed');
    rmSync(declined);
    const retried = await call(server, '/operator/runs/retry', {
      workflow: 'checkout',
      by: 'e2e',
      reason: 'card fixed',
    });
    const retry = retried.started[original] as string;
    expect((await call(server, `/runs/${retry}/wait?timeout=20s`)).run.status).toBe('success');

    await page.goto(`${server.url}/ui/runs/${retry}`);
    const retryOf = page.locator('[data-fact="retry-of"]');
    await retryOf.waitFor({ timeout: 20_000 });
    expect(await retryOf.locator(`a[href$="/runs/${original}"]`).count()).toBe(1);
    await retryOf.getByRole('link', { name: 'compare with the original' }).click();
    await page.waitForURL(`**/ui/runs/${original}/diff/${retry}`);

    const charge = page.locator('tr[data-step="charge"]');
    await charge.waitFor({ timeout: 20_000 });
    // a duration differs too when a busy machine made one run twice as slow (and 100 ms slower)
    expect(await page.locator('[data-fact="summary"]').textContent()).toMatch(
      /^\d changed, 1 in b only, 0 in a only, \d the same; the runs differ in status, output, error(, duration)?\.$/,
    );
    expect(await charge.getAttribute('data-change')).toBe('changed');
    // both sides of the charge mark its status, output and error as differing; the attempts do not differ
    for (const field of ['status', 'output', 'error'])
      expect(await charge.locator(`.differs[data-field="${field}"]`).count(), field).toBe(2);
    expect(await charge.locator('.differs[data-field="attempts"]').count()).toBe(0);
    expect(await charge.locator('td').first().textContent()).toContain('card declined');
    expect(await page.locator('tr[data-step="load"] .differs:not([data-field="duration"])').count()).toBe(0);
    const ship = page.locator('tr[data-step="ship"]');
    expect(await ship.getAttribute('data-change')).toBe('added');
    expect(await ship.locator('th').textContent()).toContain('in b only');
    expect(await page.locator('tr.differs[data-field="status"]').count()).toBe(1);
    expect(await page.locator('tr.differs[data-field="input"]').count()).toBe(0);

    const printed = cli(['runs', 'diff', original, retry, '--url', server.url]);
    expect(await printed.exited).toEqual({ code: 0, signal: null });
    expect(printed.output()).toContain('the runs differ in: status, output, error');
    expect(printed.output()).toMatch(/~ {2}charge {2}failed → success/);
    expect(printed.output()).toMatch(/\+ {2}ship {4}— → success/);
  });
});
