import { describe, expect, it } from 'vitest';
import { call, useDashboard } from './dashboard.js';

/**
 * Rules and schedules from the Triggers page (issue 47) in a real browser (needs `npm run build`): a rule's pattern
 * tried on the events received before it is created, then disabled, enabled, edited and deleted; a schedule's next ten times
 * before it is created, then backfilled over a past window and deleted.
 */

describe('operating triggers from the dashboard', () => {
  const ui = useDashboard();

  it('previews, creates, disables, enables, edits and deletes a rule', async () => {
    const { server, page } = ui;
    // names of this try alone: a retry runs on the same server
    const rule = `big-orders-${Date.now().toString(36)}`;
    const wf = await call(server, '/workflows', {
      name: `ship-${rule}`,
      steps: [{ id: 'a', type: 'log', config: { message: 'x' } }],
    });
    await call(server, '/events', [
      { id: 'small-order', source: 'shop', 'detail-type': 'order.placed', detail: { total: 40 } },
      { id: 'big-order', source: 'shop', 'detail-type': 'order.placed', detail: { total: 400 } },
    ]);
    const stored = async () =>
      ((await call(server, '/rules')).rules as Array<{ name: string; enabled: boolean }>).filter(
        (r) => r.name === rule,
      );
    await page.goto(`${server.url}/ui/triggers`);
    const form = page.locator('form.rule-form');
    await form.waitFor({ timeout: 20_000 });
    await form.getByLabel('Name', { exact: true }).fill(rule);
    await form
      .getByLabel('Pattern (JSON)')
      .fill(JSON.stringify({ source: ['shop'], detail: { total: [{ numeric: ['>=', 100] }] } }));
    await form.getByLabel('Target name').fill(wf.id);
    await form.getByRole('button', { name: 'Try on recent events' }).click();
    const preview = form.locator('[data-fact="pattern-preview"]');
    await preview.waitFor({ timeout: 20_000 });
    expect(await preview.textContent()).toMatch(/^Matches 1 of the \d+ newest events\./);
    expect(await preview.locator('li[data-event]').evaluateAll((li) => li.map((l) => l.dataset.event))).toEqual([
      'big-order',
    ]);
    expect(await stored()).toEqual([]);

    await form.getByRole('button', { name: 'Create rule' }).click();
    const row = page.locator(`tr[data-rule="${rule}"]`);
    await row.waitFor({ timeout: 20_000 });
    // the page shows what the server answered; a read of the server after it may still race the page's refresh
    await expect
      .poll(stored, { timeout: 20_000 })
      .toMatchObject([{ name: rule, enabled: true, target: { workflow: wf.id } }]);
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByRole('button', { name: 'Enable' }).waitFor({ timeout: 20_000 });
    await expect.poll(async () => (await stored())[0]?.enabled, { timeout: 20_000 }).toBe(false);
    await row.getByRole('button', { name: 'Enable' }).click();
    await row.getByRole('button', { name: 'Disable' }).waitFor({ timeout: 20_000 });
    await expect.poll(async () => (await stored())[0]?.enabled, { timeout: 20_000 }).toBe(true);
    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: `Edit rule ${rule}` });
    await edit.waitFor({ timeout: 20_000 });
    expect(await edit.getByLabel('Target name').inputValue()).toBe(wf.id);
    await edit.getByLabel('Pattern (JSON)').fill(JSON.stringify({ source: ['shop'] }));
    await edit.getByRole('button', { name: 'Try on recent events' }).click();
    await edit.locator('li[data-event="small-order"]').waitFor({ timeout: 20_000 });
    await edit.getByRole('button', { name: 'Save rule' }).click();
    await edit.waitFor({ state: 'detached', timeout: 20_000 });
    await expect
      .poll(stored, { timeout: 20_000 })
      .toMatchObject([{ name: rule, enabled: true, pattern: { source: ['shop'] } }]);
    await expect.poll(() => row.textContent(), { timeout: 20_000 }).not.toContain('numeric');

    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: `Delete rule ${rule}` }).click();
    await row.waitFor({ state: 'detached', timeout: 20_000 });
    await expect.poll(stored, { timeout: 20_000 }).toEqual([]);

    // a bad pattern is named by its field
    await form.getByLabel('Pattern (JSON)').fill(JSON.stringify({ detail: { total: [{ numeric: ['>', 'x'] }] } }));
    await form.getByRole('button', { name: 'Try on recent events' }).click();
    await form.getByRole('alert').waitFor({ timeout: 20_000 });
    expect(await form.getByRole('alert').textContent()).toContain('pattern.detail.total[0].numeric[1]');
  });

  it("shows a schedule's next ten times, creates it, backfills a past window and deletes it", async () => {
    const { server, page } = ui;
    const wf = await call(server, '/workflows', {
      name: 'daily-report',
      steps: [{ id: 'a', type: 'log', config: { message: 'x' } }],
    });
    await page.goto(`${server.url}/ui/triggers`);
    const form = page.locator('form.schedule-form');
    await form.waitFor({ timeout: 20_000 });
    await form.getByLabel('Name (optional)').fill('daily');
    await form.getByLabel('Cron').fill('0 9 * * *');
    await form.getByLabel('Time zone').fill('Europe/Berlin');
    await form.getByLabel('Target name').fill(wf.id);
    await form.getByRole('button', { name: 'Show the next ten times' }).click();
    const next = form.locator('[data-fact="schedule-preview"] time');
    await next.first().waitFor({ timeout: 20_000 });
    const shown = await next.evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')));
    const expected = await call(server, '/schedules/preview', { cron: '0 9 * * *', timezone: 'Europe/Berlin' });
    expect(shown).toEqual(expected.next);
    const daily = async () =>
      ((await call(server, '/schedules')).schedules as Array<{ name: string | null }>).filter(
        (x) => x.name === 'daily',
      );
    expect(await daily()).toEqual([]);

    await form.getByRole('button', { name: 'Create schedule' }).click();
    const row = page.locator('tr[data-schedule="daily"]');
    await row.waitFor({ timeout: 20_000 });
    const [schedule] = await daily();
    expect(schedule).toMatchObject({ name: 'daily', cron: '0 9 * * *', timezone: 'Europe/Berlin' });

    await row.getByRole('button', { name: 'Backfill…' }).click();
    await row.getByLabel('From').fill('2026-01-01T00:00');
    await row.getByLabel('To').fill('2026-01-04T00:00');
    await row.getByRole('button', { name: 'Backfill the window' }).click();
    const done = row.locator('[data-fact="backfilled"]');
    await done.waitFor({ timeout: 20_000 });
    expect(await done.textContent()).toBe('3 slots, each with its run.');
    const executions = (await call(server, `/workflows/${wf.id}/executions?limit=100`)).executions;
    expect(executions).toHaveLength(3);
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Delete schedule daily' }).click();
    await row.waitFor({ state: 'detached', timeout: 20_000 });
    expect(await daily()).toEqual([]);
  });
});
