import { describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { launchBrowser } from './browser.js';
import { serve } from './child.js';

/** The dashboard's Audit page in a real browser against `runledger serve` behind a token (needs `npm run build`). */
describe('the dashboard audit page', () => {
  it('lists privileged requests with their actor and outcome, refused ones too, and filters them', async () => {
    const token = 'ui-audit-token-7e2a';
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_TOKEN: token });
    const browser = await launchBrowser();
    const post = (path: string, body: unknown, bearer: string) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
        body: JSON.stringify(body),
      });
    try {
      expect((await post('/secrets', { name: 'UI_AUDIT', value: 'not-shown-anywhere' }, token)).status).toBe(201);
      expect((await post('/secrets', { name: 'UI_AUDIT', value: 'x' }, 'wrong')).status).toBe(401);
      const page = await browser.newPage();
      await page.goto(`${server.url}/ui/audit`);
      await page.getByRole('dialog').waitFor();
      await page.getByRole('textbox', { name: 'Token', exact: true }).fill(token);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.locator('table.audit tr[data-outcome="401"]').waitFor();
      const created = page.locator('table.audit tr[data-outcome="201"]');
      expect(await created.textContent()).toContain('bootstrap');
      expect(await created.textContent()).toContain('POST /secrets');
      expect(await page.getByRole('link', { name: 'Audit' }).getAttribute('aria-current')).toBe('page');
      expect(await page.locator('table.audit').textContent()).not.toContain('not-shown-anywhere');
      await page.getByLabel('Status').fill('401');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.locator('table.audit tr[data-outcome="201"]').waitFor({ state: 'detached' });
      expect(await page.locator('table.audit tbody tr').count()).toBe(1);
    } finally {
      await browser.close();
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  }, 60_000);
});
