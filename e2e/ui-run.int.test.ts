import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { launchBrowser } from './browser.js';
import { serve, type Served } from './child.js';
import { uiWorkflowsModule } from './ui-workflows.js';

/**
 * The run pages of the dashboard (issue 42, point 10) in a real browser against a real `runledger serve --sample`
 * (needs `npm run build`): names for stored workflows, the steps that really ran, a labelled compensation, a wake-up
 * time in words, a cancel that asks first, tab titles, and a sample run that shows what runledger does.
 */

async function call(server: Served, path: string, init: { method?: string; body?: unknown } = {}): Promise<any> {
  const res = await fetch(server.url + path, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json' },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function startCodeRun(server: Served, name: string): Promise<string> {
  await call(server, '/rules', {
    method: 'POST',
    body: {
      name: `start-${name}`,
      pattern: { source: ['ui-run-test'], 'detail-type': [name] },
      target: { workflow: name },
    },
  }).catch(() => undefined);
  const event = await call(server, '/events', {
    method: 'POST',
    body: { source: 'ui-run-test', 'detail-type': name, detail: {} },
  });
  return eventually(
    async () =>
      (await call(server, `/events/${event.id}`)).matches.find((m: { run_id: string | null }) => m.run_id)?.run_id as
        | string
        | undefined,
    15_000,
  );
}

describe('the run pages of the dashboard', () => {
  let server: Served;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    server = await serve(createSqlitePath(), ['--sample', '--workflows', uiWorkflowsModule()], {
      RUNLEDGER_POLL_MS: '100',
      RUNLEDGER_LEASE_MS: '2000',
    });
    browser = await launchBrowser();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    server?.proc.kill('SIGTERM');
    await server?.exited;
  });

  it('opens on the sample run, which retries a step, sleeps, waits for a signal and starts a child run, to success', async () => {
    await page.goto(`${server.url}/ui`);
    expect(await page.title()).toBe('Runs · runledger');
    const row = page.locator('tr[data-run="run_sample-order"]');
    await row.waitFor();
    // newest first: the sample run, under its child run once that has started
    expect(
      (
        await page
          .locator('table.runs tbody tr[data-run]')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')))
      ).slice(0, 2),
    ).toContain('run_sample-order');
    await row.getByRole('link', { name: 'run_sample-order' }).click();
    await page.locator('dl.facts [data-status="success"]').waitFor({ timeout: 30_000 });
    expect(await page.title()).toBe('run_sample-order · sample-order · runledger');
    await page.locator('ol.journal li[data-type="run.completed"]').waitFor();
    const bars = await page
      .locator('figure.gantt rect.bar')
      .evaluateAll((rects) => rects.map((r) => r.getAttribute('class')));
    // the first attempt failed, its backoff, the retry succeeded
    expect(bars).toContain('bar bar-step bar-failed');
    expect(bars).toContain('bar bar-backoff bar-retrying');
    expect(bars).toContain('bar bar-sleep bar-success');
    // the wait ended by the signal, not by its timeout
    expect(bars).toContain('bar bar-wait bar-success');
    expect(bars).toContain('bar bar-child bar-success');
    expect(await page.locator('ol.journal li[data-type="signal.sent"]').count()).toBe(1);
    await page.locator('h2', { hasText: 'Child runs' }).waitFor();
    const run = await call(server, '/runs/run_sample-order');
    expect(run.output).toEqual({ order: 'A-1042', tracking: 'TRK-A-1042', approved_by: 'ops@example.com', boxes: 3 });
    expect(run.steps.find((s: { name: string }) => s.name === 'fetch-order')).toMatchObject({
      status: 'success',
      attempts: 2,
    });
  });

  it('names stored workflows on the run list and the run page, their id in the tooltip', async () => {
    const { workflows } = await call(server, '/workflows');
    const sample = workflows.find((w: { name: string }) => w.name === 'greet-and-log');
    const { execution_id: id } = await call(server, `/workflows/${sample.id}/execute`, {
      method: 'POST',
      body: { trigger_data: { name: 'Named' } },
    });
    await page.goto(`${server.url}/ui/runs`);
    const cell = page.locator(`tr[data-run="${id}"] a[data-workflow-id]`);
    await expect.poll(() => cell.textContent()).toBe('greet-and-log');
    expect(await cell.getAttribute('title')).toBe(sample.id);
    await page.goto(`${server.url}/ui/runs/${id}`);
    const fact = page.locator('dl.facts a[data-workflow-id]');
    await expect.poll(() => fact.textContent()).toBe('greet-and-log');
    expect(await fact.getAttribute('title')).toBe(sample.id);
    await expect.poll(() => page.title()).toBe(`${id} · greet-and-log · runledger`);
  });

  it('counts the steps that ran of an execution that failed at step 3, not every step as done', async () => {
    const wf = await call(server, '/workflows', {
      method: 'POST',
      body: {
        name: 'fails-third',
        steps: [
          { id: 'one', type: 'transform', config: { template: 'a', output_key: 'a' } },
          { id: 'two', type: 'transform', config: { template: 'b', output_key: 'b' } },
          { id: 'three', type: 'log', config: { message: '{{trigger.missing}}' } },
          { id: 'four', type: 'transform', config: { template: 'd', output_key: 'd' } },
          { id: 'five', type: 'transform', config: { template: 'e', output_key: 'e' } },
        ],
      },
    });
    const { execution_id: id } = await call(server, `/workflows/${wf.id}/execute`, {
      method: 'POST',
      body: { trigger_data: {} },
    });
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="failed"]').waitFor({ timeout: 20_000 });
    await expect
      .poll(() => page.locator('[data-fact="progress"]').textContent())
      .toBe(' 3/5 steps ran: 2 succeeded, 1 failed, 2 skipped');
    expect(
      await page.locator('[data-fact="progress"] progress').evaluate((p: HTMLProgressElement) => [p.value, p.max]),
    ).toEqual([3, 5]);
  });

  it('labels the compensation of a step on the timeline', async () => {
    const id = await startCodeRun(server, 'book');
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="failed"]').waitFor({ timeout: 20_000 });
    const bar = page.locator('figure.gantt rect.bar-compensation');
    await bar.waitFor();
    expect(await bar.locator('title').textContent()).toMatch(/^hold-seat: compensation: undo hold-seat — success, /);
    expect(await page.locator('figure.gantt text.bar-text').textContent()).toBe('undo');
    expect(await page.locator('figure.gantt .legend .key-compensation').textContent()).toBe('compensation (undo)');
  });

  it("folds a model call's streamed text batches into one journal row, their text joined", async () => {
    const id = await startCodeRun(server, 'tell');
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="success"]').waitFor({ timeout: 20_000 });
    const { events } = (await call(server, `/runs/${id}/events?limit=1000`)) as { events: Array<{ type: string }> };
    const batches = events.filter((e) => e.type === 'step.text').length;
    expect(batches).toBeGreaterThan(1);
    const rows = page.locator('ol.journal li[data-type="step.text"]');
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain(`×${batches}`);
    expect(await rows.first().textContent()).toContain('w1 w2 w3 w4 w5 w6 w7 w8 w9 w10');
  });

  it("shows a sleeping run's wake-up as a local time and how far it is, never as an epoch", async () => {
    const id = await startCodeRun(server, 'nap');
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="sleeping"]').waitFor({ timeout: 20_000 });
    const until = (await call(server, `/runs/${id}/events`)).events.find(
      (e: { type: string }) => e.type === 'sleep.started',
    ).data.until as number;
    const wakes = page.locator('[data-fact="wakes"]');
    await wakes.waitFor();
    // a wake-up on another day (a run started within the hour before midnight) shows its date too
    const local = await page.evaluate((at) => {
      const d = new Date(at);
      return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
    }, until);
    expect(await wakes.textContent()).toMatch(
      new RegExp(`^${local.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(in (59|60) min\\) from sleep nap$`),
    );
    expect(await page.locator('ol.journal li[data-type="sleep.started"] time[data-at]').textContent()).toContain(
      '(in ',
    );
    expect(await page.locator('dl.facts').textContent()).not.toContain(String(until));
    await call(server, `/runs/${id}/cancel`, { method: 'POST' });
  });

  it('asks before cancelling a run, and Keep it running keeps it', async () => {
    const id = await startCodeRun(server, 'nap');
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="sleeping"]').waitFor({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Cancel this run?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(id);
    await dialog.getByRole('button', { name: 'Keep it running' }).click();
    await dialog.waitFor({ state: 'detached' });
    expect((await call(server, `/runs/${id}`)).status).toBe('sleeping');
    // Escape closes it too, without cancelling
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect((await call(server, `/runs/${id}`)).status).toBe('sleeping');
    // it opens on the safe choice: Enter does not stop the run; the reason typed is journaled with the cancel
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Keep it running');
    await dialog.getByLabel('Reason (optional)').fill('customer asked');
    await dialog.getByRole('button', { name: 'Cancel run', exact: true }).click();
    await page.locator('dl.facts [data-status="cancelled"]').waitFor({ timeout: 20_000 });
    expect((await call(server, `/runs/${id}`)).status).toBe('cancelled');
    const journal = await call(server, `/runs/${id}/events?types=run.cancel_requested`);
    expect(journal.events.map((e: { data: unknown }) => e.data)).toEqual([{ reason: 'customer asked' }]);
  });
});
