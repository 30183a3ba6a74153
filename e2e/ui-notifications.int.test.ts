import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { launchBrowser } from './browser.js';
import { freePort, serve, type Served } from './child.js';

/** The dashboard's Notifications page lists a notification and its deliveries with their attempts (needs `npm run build`). */

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

describe('the Notifications page', () => {
  let server: Served;
  let browser: Browser;
  let page: Page;
  const answers = [503];
  const hook = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(answers.shift() ?? 200).end('ok'));
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    server = await serve(createSqlitePath(), [], { RUNLEDGER_POLL_MS: '100', RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    browser = await launchBrowser();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    server?.proc.kill('SIGTERM');
    await server?.exited;
    hook.closeAllConnections();
    await new Promise((resolve) => hook.close(resolve));
  });

  it("shows a failed run's delivery with its two attempts, 503 then 200", async () => {
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    const n = await call(server, '/notifications', { name: 'on-call', url, events: ['run.failed'] });
    const wf = await call(server, '/workflows', {
      name: 'doomed',
      steps: [
        {
          id: 'call',
          type: 'http_request',
          retry: { max_attempts: 1, backoff_seconds: 1, backoff_rate: 1 },
          config: { method: 'POST', url: `http://127.0.0.1:${await freePort()}/nobody` },
        },
      ],
    });
    await call(server, `/workflows/${wf.id}/execute`, { trigger_data: {} });

    await page.goto(`${server.url}/ui/notifications`);
    await page.locator(`tr[data-notification="${n.id}"]`).getByRole('link', { name: 'on-call' }).click();
    const row = page.locator('tr[data-delivery][data-status="delivered"]');
    // the page loads once: reload until the retry has landed
    for (let i = 0; i < 40 && (await row.count()) === 0; i++) {
      await page.waitForTimeout(500);
      await page.reload();
      await page.locator('h1', { hasText: 'Notification on-call' }).waitFor({ timeout: 10_000 });
    }
    const attempts = row.locator('li[data-attempt]');
    expect(await attempts.allTextContents()).toEqual([
      expect.stringMatching(/^#1 .*503 \(\d+ ms\).*503/),
      expect.stringMatching(/^#2 .*200 \(\d+ ms\)$/),
    ]);
    expect(await row.textContent()).toContain('run.failed');
  });
});
