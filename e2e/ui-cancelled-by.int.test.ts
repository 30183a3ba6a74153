import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { launchBrowser } from './browser.js';
import { serve, type Served } from './child.js';

/** The dashboard's run page says who cancelled an execution (brief 004 §9), in a real browser (needs `npm run build`). */

async function call(server: Served, path: string, body?: unknown): Promise<any> {
  const res = await fetch(server.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

describe('who cancelled an execution, on its run page', () => {
  let server: Served;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    server = await serve(createSqlitePath(), [], { RUNLEDGER_POLL_MS: '100' });
    browser = await launchBrowser();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    server?.proc.kill('SIGTERM');
    await server?.exited;
  });

  it('shows "system" and the reason for an execution the engine cancelled at its timeout_seconds, "user" for one cancelled by hand', async () => {
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
