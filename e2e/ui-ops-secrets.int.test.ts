import { describe, expect, it } from 'vitest';
import { call, useDashboard } from './dashboard.js';

/**
 * Secrets from the Workflows page (issue 47) in a real browser (needs `npm run build`): names and dates only, a value
 * written and never shown (not in the page, not in any answer), replaced by name, a bad name named, deleted.
 */

describe('managing secrets from the dashboard', () => {
  const ui = useDashboard();

  it('stores, replaces and deletes a secret, never showing its value', async () => {
    const { server, page } = ui;
    const value = 'sk-planted-5c1e9a';
    await page.goto(`${server.url}/ui/workflows`);
    const form = page.locator('form.secret-form');
    await form.waitFor({ timeout: 20_000 });
    await form.getByLabel('Secret name').fill('api_key');
    await form.getByLabel('Value (write-only)').fill(value);
    await form.getByRole('button', { name: 'Store' }).click();
    const row = page.locator('tr[data-secret="api_key"]');
    await row.waitFor({ timeout: 20_000 });
    expect(await form.getByRole('status').textContent()).toBe('Stored api_key; its value is not shown again.');
    expect(await form.getByLabel('Value (write-only)').inputValue()).toBe('');
    const [stored] = (await call(server, '/secrets')).secrets;
    expect(Object.keys(stored).sort()).toEqual(['created_at', 'name', 'updated_at']);
    expect(await row.locator('time').first().getAttribute('datetime')).toBe(stored.created_at);
    expect(await page.content()).not.toContain(value);

    await form.getByLabel('Secret name').fill('api_key');
    await form.getByLabel('Value (write-only)').fill(`${value}-2`);
    await form.getByRole('button', { name: 'Replace the value' }).click();
    await form.getByText('Replaced api_key; its value is not shown again.').waitFor({ timeout: 20_000 });
    const [replaced] = (await call(server, '/secrets')).secrets;
    expect(replaced.created_at).toBe(stored.created_at);
    expect(Date.parse(replaced.updated_at)).toBeGreaterThanOrEqual(Date.parse(stored.updated_at));
    expect(await page.content()).not.toContain(value);

    await form.getByLabel('Secret name').fill('bad name');
    await form.getByLabel('Value (write-only)').fill('x');
    await form.getByRole('button', { name: 'Store' }).click();
    await form.getByRole('alert').waitFor({ timeout: 20_000 });
    expect(await form.getByRole('alert').textContent()).toMatch(/name/);

    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete secret api_key' }).click();
    await row.waitFor({ state: 'detached', timeout: 20_000 });
    expect((await call(server, '/secrets')).secrets).toEqual([]);
  });
});
