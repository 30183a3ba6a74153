import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { call, useDashboard } from './dashboard.js';

/**
 * Pause and resume from the dashboard (issue 47) in a real browser (needs `npm run build`): the Workflows page lists
 * each queue with a pause button that asks why, and pauses a workflow by name; the operator's journal says who and why.
 */

describe('pausing and resuming from the Workflows page', () => {
  const ui = useDashboard();

  it('pauses and resumes a queue, then a workflow, each with a reason, journaled', async () => {
    const { server, page } = ui;
    await call(server, '/queues/mail/tasks', { tasks: [{ payload: 1 }, { payload: 2 }] });
    await page.goto(`${server.url}/ui/workflows`);
    const row = page.locator('tr[data-queue="mail"]');
    await row.waitFor({ timeout: 20_000 });
    expect(await row.textContent()).toContain('2 (2)');

    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByLabel('Reason').fill('smtp outage');
    await row.getByRole('button', { name: 'Pause queue mail' }).click();
    await row.locator('[data-fact="paused"]').waitFor({ timeout: 20_000 });
    expect(await row.locator('[data-fact="paused"]').textContent()).toMatch(/^paused by dashboard .*: smtp outage$/);
    expect((await call(server, '/operator/pauses')).pauses).toMatchObject([
      { kind: 'queue', name: 'mail', paused_by: 'dashboard', reason: 'smtp outage' },
    ]);

    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByLabel('Reason').fill('smtp back');
    await row.getByRole('button', { name: 'Resume queue mail' }).click();
    await row.getByText('running').waitFor({ timeout: 20_000 });
    expect((await call(server, '/operator/pauses')).pauses).toEqual([]);

    await page.getByLabel('Workflow to pause').fill('billing');
    await page.getByRole('button', { name: 'Pause workflow' }).click();
    await page.locator('form.reasoned').getByLabel('Reason').fill('bad deploy');
    await page.getByRole('button', { name: 'Pause workflow billing' }).click();
    const paused = page.locator('li[data-workflow="billing"]');
    await paused.waitFor({ timeout: 20_000 });
    expect(await paused.textContent()).toContain('bad deploy');
    expect((await call(server, '/operator/pauses')).pauses).toMatchObject([
      { kind: 'workflow', name: 'billing', reason: 'bad deploy' },
    ]);
    await paused.getByRole('button', { name: 'Resume' }).click();
    await paused.getByLabel('Reason').fill('fixed');
    await paused.getByRole('button', { name: 'Resume workflow billing' }).click();
    await page.getByText('No workflow is paused.').waitFor({ timeout: 20_000 });

    const actions = await eventually(async () => {
      const answer = (await call(server, '/operator/actions')).actions as Array<{ action: string; reason: string }>;
      return answer.length === 4 && answer;
    }, 20_000);
    expect(actions.map((a) => [a.action, a.reason])).toEqual([
      ['workflow.resumed', 'fixed'],
      ['workflow.paused', 'bad deploy'],
      ['queue.resumed', 'smtp back'],
      ['queue.paused', 'smtp outage'],
    ]);
  });
});
