import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { call, useDashboard } from './dashboard.js';

/**
 * Bulk cancel, retry and redrive by filter from the dashboard (issue 47) in a real browser (needs `npm run build`):
 * each first counts what the filter matches (a dry run: nothing changes), then acts once a reason is given.
 */

describe('bulk actions by filter', () => {
  const ui = useDashboard();

  it('cancels the waiting runs of a filter after a preview count, then retries them', async () => {
    const { server, page } = ui;
    const wf = await call(server, '/workflows', {
      name: 'approval',
      steps: [{ id: 'approve', type: 'wait_for_callback', timeout_seconds: 600, config: {} }],
    });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await call(server, `/workflows/${wf.id}/execute`, { trigger_data: { i } })).execution_id);
    const statuses = async (status: string) =>
      ((await call(server, `/runs?status=${status}&limit=100`)).runs as Array<{ id: string }>).map((r) => r.id).sort();
    await eventually(async () => (await statuses('waiting')).length === 3, 20_000);

    await page.goto(`${server.url}/ui/runs?status=waiting`);
    const bulk = page.getByRole('region', { name: 'Bulk actions' });
    expect(await bulk.textContent()).toContain('status waiting');
    await bulk.getByRole('button', { name: 'Cancel matching…' }).click();
    const count = bulk.locator('[data-fact="preview-count"]');
    await count.waitFor({ timeout: 20_000 });
    expect(await count.textContent()).toBe('Cancel: 3 runs match.');
    // the preview changed nothing
    expect(await statuses('waiting')).toEqual([...ids].sort());
    const confirm = bulk.getByRole('button', { name: 'Cancel 3 runs' });
    expect(await confirm.isDisabled()).toBe(true);
    await bulk.getByLabel('Reason').fill('approvals moved');
    await confirm.click();
    await bulk.getByText('Cancelled 3 runs.').waitFor({ timeout: 20_000 });
    // a cancel is asked for in the bulk action's transaction; each run ends at its next pass
    await eventually(async () => (await statuses('cancelled')).length === 3, 20_000);
    expect(await statuses('cancelled')).toEqual([...ids].sort());

    await page.goto(`${server.url}/ui/runs?status=cancelled`);
    await bulk.getByRole('button', { name: 'Retry matching…' }).click();
    await bulk.getByText('Retry: 3 runs match.').waitFor({ timeout: 20_000 });
    await bulk.getByLabel('Reason').fill('approvals back');
    await bulk.getByRole('button', { name: 'Retry 3 runs' }).click();
    await bulk.getByText('Started again 3 runs.').waitFor({ timeout: 20_000 });
    await eventually(async () => (await statuses('waiting')).length === 3, 20_000);
    const journal = (await call(server, '/operator/actions')).actions as Array<{ action: string; reason: string }>;
    expect(journal.map((a) => a.reason)).toEqual(['approvals back', 'approvals moved']);
  });

  it('redrives the dead tasks of one queue after a preview count, leaving the others dead', async () => {
    const { server, page } = ui;
    const kill = async (queue: string) => {
      await call(server, `/queues/${queue}/tasks`, { payload: { queue }, max_attempts: 1 });
      const [task] = (await call(server, `/queues/${queue}/claim`, { worker: 'w', max: 1 })).tasks;
      await call(server, `/tasks/${task.id}/fail`, { lease_token: task.lease_token, error: 'boom', retryable: false });
      return task.id as string;
    };
    const mail = [await kill('mail-out'), await kill('mail-out')];
    const other = await kill('sms-out');

    await page.goto(`${server.url}/ui/dead`);
    await page.locator(`tr[data-task="${other}"]`).waitFor({ timeout: 20_000 });
    await page.getByRole('textbox', { name: 'Queue' }).fill('mail-out');
    const bulk = page.getByRole('region', { name: 'Bulk actions' });
    await bulk.getByRole('button', { name: 'Redrive matching…' }).click();
    await bulk.getByText('Redrive: 2 dead tasks match.').waitFor({ timeout: 20_000 });
    expect(await bulk.textContent()).toContain(mail[0]);
    await bulk.getByLabel('Reason').fill('smtp fixed');
    await bulk.getByRole('button', { name: 'Redrive 2 dead tasks' }).click();
    await bulk.getByText('Redrove 2 dead tasks.').waitFor({ timeout: 20_000 });
    const dead = ((await call(server, '/dlq?limit=100')).tasks as Array<{ id: string }>).map((t) => t.id);
    expect(dead).toEqual([other]);
  });
});
