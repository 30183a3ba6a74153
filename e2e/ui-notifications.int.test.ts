import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './child.js';
import { call, useDashboard } from './dashboard.js';

/** The dashboard's Notifications page lists a notification and its deliveries with their attempts (needs `npm run build`). */

describe('the Notifications page', () => {
  const ui = useDashboard([], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
  const answers = [503];
  const hook = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(answers.shift() ?? 200).end('ok'));
  });

  beforeAll(() => new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve)));

  afterAll(async () => {
    hook.closeAllConnections();
    await new Promise((resolve) => hook.close(resolve));
  });

  it("shows a failed run's delivery with its two attempts, 503 then 200", async () => {
    const { server, page } = ui;
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
