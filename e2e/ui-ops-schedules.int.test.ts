import { describe, expect, it } from 'vitest';
import { call, useDashboard } from './dashboard.js';

/**
 * Editing, pausing and resuming a schedule from the Triggers page (issue 47) in a real browser (needs `npm run build`):
 * the edited cron's next ten times before it is saved, the same id after, and a pause that empties its next fire times.
 */

describe('editing and pausing a schedule from the dashboard', () => {
  const ui = useDashboard();

  it("edits a schedule's cron, time zone and input in place, then pauses and resumes it", async () => {
    const { server, page } = ui;
    const wf = await call(server, '/workflows', {
      name: 'nightly',
      steps: [{ id: 'a', type: 'log', config: { message: 'x' } }],
    });
    const made = await call(server, '/schedules', { name: 'night', cron: '0 9 * * *', target: { workflow: wf.id } });
    const stored = async () => await call(server, `/schedules/${made.id}`);
    await page.goto(`${server.url}/ui/triggers`);
    const row = page.locator('tr[data-schedule="night"]');
    await row.waitFor({ timeout: 20_000 });

    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit schedule night' });
    expect(await edit.getByLabel('Cron').inputValue()).toBe('0 9 * * *');
    expect(await edit.getByLabel('Target name').inputValue()).toBe(wf.id);
    await edit.getByLabel('Cron').fill('30 22 * * 1-5');
    await edit.getByLabel('Time zone').fill('Asia/Tokyo');
    await edit.getByLabel(/^Input/).fill(JSON.stringify({ at: '$.slot' }));
    await edit.getByRole('button', { name: 'Show the next ten times' }).click();
    const next = edit.locator('[data-fact="schedule-preview"] time');
    await next.first().waitFor({ timeout: 20_000 });
    const expected = await call(server, '/schedules/preview', { cron: '30 22 * * 1-5', timezone: 'Asia/Tokyo' });
    expect(await next.evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime')))).toEqual(expected.next);
    expect((await stored()).cron).toBe('0 9 * * *');
    await edit.getByRole('button', { name: 'Save schedule' }).click();
    await edit.waitFor({ state: 'detached', timeout: 20_000 });
    expect(await stored()).toMatchObject({
      id: made.id,
      cron: '30 22 * * 1-5',
      timezone: 'Asia/Tokyo',
      input: { at: '$.slot' },
      next: expected.next.slice(0, 3),
    });
    await row.locator('td.mono', { hasText: '30 22 * * 1-5' }).waitFor({ timeout: 20_000 });

    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByRole('button', { name: 'Resume' }).waitFor({ timeout: 20_000 });
    expect(await stored()).toMatchObject({ paused: true, next: [] });
    expect(await row.locator('[data-fact="paused"]').textContent()).toBe('paused');
    expect(await row.locator('time').count()).toBe(0);
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByRole('button', { name: 'Pause' }).waitFor({ timeout: 20_000 });
    expect(await stored()).toMatchObject({ paused: false, next: expected.next.slice(0, 3) });
    expect(await row.locator('time').count()).toBe(3);

    // a bad cron is named by its field, and nothing changes
    await row.getByRole('button', { name: 'Edit' }).click();
    await edit.getByLabel('Cron').fill('61 * * * *');
    await edit.getByRole('button', { name: 'Save schedule' }).click();
    await edit.getByRole('alert').waitFor({ timeout: 20_000 });
    expect(await edit.getByRole('alert').textContent()).toContain('cron');
    expect((await stored()).cron).toBe('30 22 * * 1-5');
  });
});
