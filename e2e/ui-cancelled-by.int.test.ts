import { describe, expect, it } from 'vitest';
import { eventually } from '../src/testing/engine.js';
import { call, useDashboard } from './dashboard.js';

/** The dashboard's run page says who cancelled an execution (brief 004 §9), in a real browser (needs `npm run build`). */

describe('who cancelled an execution, on its run page', () => {
  const ui = useDashboard();

  it('shows "system" and the reason for an execution the engine cancelled at its timeout_seconds, "user" for one cancelled by hand', async () => {
    const { server, page } = ui;
    const wf = await call(server, '/workflows', {
      name: 'waits-for-a-callback',
      timeout_seconds: 1,
      steps: [{ id: 'callback', type: 'wait_for_callback', timeout_seconds: 60, config: {} }],
    });
    const timedOut = (await call(server, `/workflows/${wf.id}/execute`, {})).execution_id as string;
    await eventually(
      async () => (await call(server, `/workflows/${wf.id}/executions/${timedOut}`)).status === 'cancelled',
      20_000,
    );
    await page.goto(`${server.url}/ui/runs/${timedOut}`);
    const fact = page.locator('[data-fact="cancelled-by"]');
    await fact.waitFor({ timeout: 20_000 });
    expect(await fact.textContent()).toMatch(/^system \(timeout: the run had not ended by its deadline/);

    const patient = await call(server, '/workflows', {
      name: 'waits-longer',
      steps: [{ id: 'callback', type: 'wait_for_callback', timeout_seconds: 60, config: {} }],
    });
    const eid = (await call(server, `/workflows/${patient.id}/execute`, {})).execution_id as string;
    await call(server, `/workflows/${patient.id}/executions/${eid}/cancel`, { reason: 'not needed' });
    await page.goto(`${server.url}/ui/runs/${eid}`);
    await page.locator('[data-fact="cancelled-by"]', { hasText: 'user (not needed)' }).waitFor({ timeout: 20_000 });
  });
});
