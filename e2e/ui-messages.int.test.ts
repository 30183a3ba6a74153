import { describe, expect, it } from 'vitest';
import { startMockServices } from '../src/mock-services/index.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { launchBrowser } from './browser.js';
import { serve } from './child.js';
import { pipelineForTests } from './pipeline.js';

/** The dashboard's execution view shows a definition's messages (brief 004 §13.2); needs `npm run build` (it runs from dist/). */
describe('the dashboard shows the message beside the error', () => {
  it("a timed-out poll: the execution's sentence above its error, the step's above the step's error", async () => {
    const mock = await startMockServices({ speed: 20 });
    // the layout never finishes: its poll times out whatever the machine's speed
    mock.setFaults([{ endpoint: 'POST /v1/layout/proposals', job: 'hang' }]);
    const server = await serve(createSqlitePath(), [], { RUNLEDGER_POLL_MS: '100', RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    const browser = await launchBrowser();
    try {
      const post = async (path: string, body: unknown) => {
        const res = await fetch(server.url + path, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(res.status, await res.clone().text()).toBeLessThan(300);
        return res.json() as Promise<any>;
      };
      const definition = {
        ...pipelineForTests({ layoutMaxWait: 0.05 }),
        messages: { errors: { timeout: 'The design service took too long for {{trigger.title}}.' } },
      };
      const wf = await post('/workflows', definition);
      const { execution_id: eid } = await post(`/workflows/${wf.id}/execute`, {
        trigger_data: { services: mock.url, content: '# A\nText', title: 'Q3' },
      });
      await eventually(
        async () =>
          (await (await fetch(`${server.url}/workflows/${wf.id}/executions/${eid}`)).json()).status === 'failed',
        30_000,
      );
      const page = await browser.newPage();
      await page.goto(`${server.url}/ui/runs/${eid}`);
      await page.locator('dl.facts [data-status="failed"]').waitFor({ timeout: 20_000 });
      expect(await page.locator('.run-message').textContent()).toBe('The design service took too long for Q3.');
      expect(await page.locator('.error .run-error').textContent()).toContain('StepTimedOutError');
      expect(await page.locator('tr[data-step="layout_wait"] .step-message').textContent()).toBe(
        'The design service took too long for Q3.',
      );
      expect(await page.locator('tr[data-step="layout_wait"] .step-error').textContent()).toContain('maximum wait');
    } finally {
      await browser.close();
      server.proc.kill('SIGTERM');
      await server.exited;
      await mock.close();
    }
  });
});
