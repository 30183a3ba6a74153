import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { cli } from './child.js';
import { call, useDashboard } from './dashboard.js';

/**
 * The dashboard's Limits page (issue 40) in a real browser (needs `npm run build`): a run held back by a concurrency
 * limit shows under its key, "1 of 1 in use", linked to its run page, which says what it waits for; the runs list
 * and `runledger limits list` say so too.
 */

describe('the Limits page', () => {
  const ui = useDashboard();

  it('shows a run held by a concurrency limit under its key, 1 of 1 in use, linked to its run page', async () => {
    const { server, page } = ui;
    await call(server, '/limits', { name: 'openai', limit: 500, period: '1m' });
    const wf = await call(server, '/workflows', {
      name: 'one-at-a-time',
      concurrency: [{ key: 'trigger.user', limit: 1 }],
      steps: [{ id: 'approve', type: 'wait_for_callback', timeout_seconds: 600, config: {} }],
    });
    const execute = () => call(server, `/workflows/${wf.id}/execute`, { trigger_data: { user: 'ada' } });
    const first = (await execute()).execution_id as string;
    const second = (await execute()).execution_id as string;
    const flow = await eventually(async () => {
      const answer = await call(server, '/flow');
      return answer.concurrency[0]?.waiting === 1 && answer;
    }, 20_000);
    const key = flow.concurrency[0].key as string;
    expect(flow.concurrency[0]).toMatchObject({ in_use: 1, active_runs: [first], waiting_runs: [second] });
    expect(key).toMatch(/ada$/);

    await page.goto(`${server.url}/ui/limits`);
    const row = page.locator(`tr[data-key="${key}"]`);
    await row.waitFor({ timeout: 20_000 });
    expect(await row.textContent()).toContain('1 of 1 in use');
    expect(await page.locator('table.rate-limits').textContent()).toContain('500 per minute');
    // the waiting run's link leads to its run page, which says what it waits for
    await row.locator(`a[href$="/runs/${second}"]`).click();
    const reason = page.locator('[data-fact="waiting-for"]');
    await reason.waitFor({ timeout: 20_000 });
    expect(await reason.textContent()).toBe(`concurrency ${key} — 1 of 1 in use`);

    await page.goto(`${server.url}/ui/runs`);
    await page.locator('[data-fact="waiting-for"]', { hasText: `concurrency ${key}` }).waitFor({ timeout: 20_000 });

    const listed = cli(['limits', 'list', '--url', server.url]);
    expect(await listed.exited).toEqual({ code: 0, signal: null });
    expect(listed.output()).toMatch(new RegExp(`${key}\\s+1 of 1\\s+1`));
    const runs = cli(['runs', 'list', '--url', server.url]);
    expect(await runs.exited).toEqual({ code: 0, signal: null });
    expect(runs.output()).toContain(`(concurrency ${key} — 1 of 1 in use)`);
  });
});
