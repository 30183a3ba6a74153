import Database from 'better-sqlite3';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { newId } from '../src/ids.js';
import { runStream } from '../src/runtime/pass/history.js';
import { TerminalError } from '../src/errors.js';
import { createPostgresDatabase, createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { startMockServices } from '../src/mock-services/index.js';
import { launchBrowser } from './browser.js';
import { serve, type Served } from './child.js';
import { pipelineForTests } from './pipeline.js';
import { uiWorkflowsModule } from './ui-workflows.js';

/**
 * The dashboard in a real browser against a real `runledger serve` (needs `npm run build`: the
 * server and the dashboard run from dist/). Waits are on the page's state, never on time.
 */

const FAST = { RUNLEDGER_POLL_MS: '100', RUNLEDGER_LEASE_MS: '2000' };

async function call(
  server: Served,
  path: string,
  init: { method?: string; body?: unknown; token?: string } = {},
): Promise<any> {
  const res = await fetch(server.url + path, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Starts code workflow `name` through a rule and an event (the API's way to start one); resolves with the run id. */
async function startCodeRun(server: Served, name: string): Promise<string> {
  await call(server, '/rules', {
    method: 'POST',
    body: {
      name: `start-${name}`,
      pattern: { source: ['ui-test'], 'detail-type': [name] },
      target: { workflow: name },
    },
  }).catch(() => undefined);
  const event = await call(server, '/events', {
    method: 'POST',
    body: { source: 'ui-test', 'detail-type': name, detail: { n: Math.random() } },
  });
  return eventually(
    async () =>
      (await call(server, `/events/${event.id}`)).matches.find((m: { run_id: string | null }) => m.run_id)?.run_id as
        | string
        | undefined,
    15_000,
  );
}

describe('the dashboard on SQLite', () => {
  let server: Served;
  let browser: Browser;
  let page: Page;
  let deadTask: string;
  let database: string;

  beforeAll(async () => {
    database = createSqlitePath();
    // a dead task, written before the server starts: one attempt, failed for good
    const engine = await createEngine({ database, workers: false });
    try {
      const { task } = await engine.queue.enqueue('ui-test', { order: 7 }, { maxAttempts: 1 });
      deadTask = task.id;
      engine.work('ui-test', async () => {
        throw new TerminalError('the mail server said no');
      });
      await eventually(async () => (await engine.store.taskGet({ id: deadTask })).state === 'dead', 15_000);
    } finally {
      await engine.close();
    }
    server = await serve(database, ['--sample', '--workflows', uiWorkflowsModule()], FAST);
    browser = await launchBrowser();
    page = await browser.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    server?.proc.kill('SIGTERM');
    await server?.exited;
  });

  it('opens on the run list with the sample run, and shows a new run live, without a reload', async () => {
    await page.goto(`${server.url}/ui`);
    await page.locator('table.runs tbody tr[data-run^="ex_"]').first().waitFor();
    await page.locator('.live.on').waitFor();
    const workflows = await call(server, '/workflows');
    const started = await call(server, `/workflows/${workflows.workflows[0].id}/execute`, {
      method: 'POST',
      body: { trigger_data: { name: 'Live' } },
    });
    await page.locator(`tr[data-run="${started.execution_id}"][data-status="success"]`).waitFor({ timeout: 20_000 });
    // filters go in the URL, so the filtered list can be shared
    await page.getByLabel('Kind').selectOption('execution');
    await page.getByLabel('Status').selectOption('success');
    await page.waitForURL(/kind=execution&status=success|status=success&kind=execution/);
    await expect
      .poll(() =>
        page
          .locator('table.runs tbody tr[data-run]')
          .evaluateAll((rows) =>
            rows.map((r) => `${r.getAttribute('data-run')!.slice(0, 3)} ${r.getAttribute('data-status')}`),
          ),
      )
      .toEqual(['ex_ success', 'ex_ success']);
  });

  it('executes a workflow from its form and follows the new run to success live', async () => {
    await page.goto(`${server.url}/ui/workflows`);
    await page.getByRole('link', { name: 'greet-and-log' }).click();
    await page.getByLabel('Trigger data (JSON)').fill('{"name":"Grace"}');
    await page.getByLabel('Idempotency-Key (optional)').fill('form-run-1');
    await page.getByRole('button', { name: 'Execute' }).click();
    await page.waitForURL(/\/ui\/runs\/ex_\w+$/);
    await page.locator('dl.facts [data-status="success"]').waitFor({ timeout: 20_000 });
    await page.locator('ol.journal li[data-type="run.completed"]').waitFor();
    expect(await page.locator('tr[data-step="greet"] [data-status="success"]').count()).toBe(1);
    expect(await page.locator('figure.gantt rect.bar-success').count()).toBeGreaterThanOrEqual(3);
    // the back button returns to the workflow
    await page.goBack();
    await page.getByRole('heading', { name: 'greet-and-log' }).waitFor();
  });

  it('shows every validation error of a definition at its path', async () => {
    await page.goto(`${server.url}/ui/workflows/new`);
    await page
      .getByLabel('Definition (JSON)')
      .fill(JSON.stringify({ name: '', steps: [{ id: 'a', type: 'teleport', config: {} }] }));
    await page.getByRole('button', { name: 'Create' }).click();
    await page.locator('ul.problems li').first().waitFor();
    const paths = await page
      .locator('ul.problems li')
      .evaluateAll((items) => items.map((li) => li.getAttribute('data-path')));
    expect(paths).toContain('name');
    expect(paths.some((p) => p?.startsWith('steps[0]') || p?.startsWith('steps.0'))).toBe(true);
  });

  it('opens a failed run and shows the step error', async () => {
    const id = await startCodeRun(server, 'broken');
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="failed"]').waitFor({ timeout: 20_000 });
    await expect
      .poll(() => page.locator('tr[data-step="charge"] .step-error').textContent())
      .toContain('card declined: insufficient funds');
    await page.locator('figure.gantt rect.bar-failed').first().waitFor();
  });

  it('cancels a sleeping run', async () => {
    const id = await startCodeRun(server, 'nap');
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="sleeping"]').waitFor({ timeout: 20_000 });
    await page.locator('figure.gantt rect.bar-sleep').waitFor();
    // one click only asks (e2e/ui-run.int.test.ts tests the dialog)
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await page
      .getByRole('dialog', { name: 'Cancel this run?' })
      .getByRole('button', { name: 'Cancel run', exact: true })
      .click();
    await page.locator('dl.facts [data-status="cancelled"]').waitFor({ timeout: 20_000 });
    expect(await page.getByRole('button', { name: 'Cancel run…' }).count()).toBe(0);
    expect((await call(server, `/runs/${id}`)).status).toBe('cancelled');
  });

  it('redrives a dead task', async () => {
    await page.goto(`${server.url}/ui/dead`);
    const row = page.locator(`tr[data-task="${deadTask}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('the mail server said no');
    await row.getByRole('button', { name: 'Redrive' }).click();
    await row.waitFor({ state: 'detached' });
    const dead = await call(server, '/dlq');
    expect(dead.tasks.map((t: { id: string }) => t.id)).not.toContain(deadTask);
  });

  it('approves a blocked tool call from the approvals queue and shows the agent run reach success live', async () => {
    await page.goto(`${server.url}/ui/agents`);
    await page.locator('.live.on').waitFor();
    // the sample agent blocks issue_refund (high risk) for a person's approval when the text asks for a refund
    const sent = await call(server, '/agent/events', {
      method: 'POST',
      body: {
        conversation_id: 'ui-conv-1',
        user_id: 'u-ada',
        source: 'ui-test',
        input_type: 'text',
        payload: { text: 'Please refund order 1042' },
      },
    });
    const row = page.locator(`table.agent-runs tr[data-run="${sent.run_id}"]`);
    const approval = page.locator('ul.approvals li[data-tool="issue_refund"]', { hasText: sent.run_id });
    await approval.waitFor({ timeout: 20_000 });
    expect(await approval.locator('.risk').textContent()).toBe('high risk');
    expect(await approval.textContent()).toContain('"order_id": "1042"');
    await row.locator('[data-status="waiting"]').waitFor();
    await approval.getByRole('button', { name: /^Approve issue_refund/ }).click();
    await approval.waitFor({ state: 'detached' });
    await page
      .locator(`table.agent-runs tr[data-run="${sent.run_id}"][data-status="success"]`)
      .waitFor({ timeout: 20_000 });

    // the run: its nodes, tool calls with their risk, the decision, its checkpoints and lifecycle
    await row.getByRole('link', { name: sent.run_id }).click();
    await page.getByRole('heading', { name: `Agent run ${sent.run_id}` }).waitFor();
    expect(await page.title()).toBe(`${sent.run_id} · runledger`);
    // the heading shows before the run's tables are fetched
    await page.locator('table.tool-calls tbody tr').first().waitFor();
    await page.locator('table.agent-steps tbody tr').nth(2).waitFor();
    expect(
      await page
        .locator('table.agent-steps tbody tr')
        .evaluateAll((rows) => rows.map((r) => `${r.getAttribute('data-node')} ${r.getAttribute('data-status')}`)),
    ).toEqual(['classify ok', 'act ok', 'reply ok']);
    const tools = await page
      .locator('table.tool-calls tbody tr')
      .evaluateAll((rows) =>
        rows.map((r) => [
          r.getAttribute('data-tool'),
          r.querySelector('.risk')?.textContent,
          r.getAttribute('data-status'),
          r.querySelector('[data-approval]')?.getAttribute('data-approval'),
        ]),
      );
    expect(tools).toEqual([
      ['lookup_order', 'low', 'ok', 'none'],
      ['issue_refund', 'high', 'ok', 'approved'],
    ]);
    expect(await page.locator('table.tool-calls tr[data-tool="issue_refund"]').textContent()).toContain('by dashboard');
    expect(
      await page.locator('ol.checkpoints li').evaluateAll((items) => items.map((li) => li.getAttribute('data-node'))),
    ).toEqual(['classify', 'act', 'reply']);
    await page.locator('ol.lifecycle li[data-type="SESSION_INITIATED"]').waitFor();
    expect((await call(server, `/agent/runs/${sent.run_id}`)).status).toBe('success');
  });

  it('still lists a session the agent ledger has no run for, with its lifecycle', async () => {
    const oldSession = (
      await call(server, '/sessions', { method: 'POST', body: { agent: 'sample-agent', input: { task: 'summarize' } } })
    ).session_id;
    await eventually(async () => (await call(server, `/sessions/${oldSession}`)).status === 'success', 20_000);
    // as in a database from before the agent ledger: no ledger row for the session
    const db = new Database(database, { timeout: 10_000 });
    db.transaction(() => {
      for (const table of ['agent_checkpoints', 'agent_tool_calls', 'agent_steps'])
        db.prepare(`DELETE FROM ${table} WHERE run_id = ?`).run(oldSession);
      expect(db.prepare('DELETE FROM agent_runs WHERE id = ?').run(oldSession).changes).toBe(1);
    })();
    db.close();
    await page.goto(`${server.url}/ui/agents`);
    await page.getByRole('heading', { name: 'Sessions without ledger data' }).waitFor();
    await page.getByRole('link', { name: oldSession }).click();
    await page.getByRole('heading', { name: `Session ${oldSession}` }).waitFor();
    await page.locator('ol.lifecycle li[data-type="AGENT_BACKGROUND_TASK_COMPLETED"]').waitFor();
    expect(await page.locator('dl.facts [data-status]').first().getAttribute('data-status')).toBe('success');
    expect(await page.locator('table.tool-calls').count()).toBe(0);
  });

  it('is usable by keyboard: the skip link, the menu, and focus on each new page', async () => {
    await page.goto(`${server.url}/ui/runs`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    // through the menu to Overview, opened with Enter
    for (let i = 0; i < 20 && (await page.evaluate(() => document.activeElement?.textContent)) !== 'Overview'; i++)
      await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/ui\/overview$/);
    await page.locator('.tiles').waitFor();
    await expect
      .poll(() => page.evaluate(() => `${document.activeElement?.tagName} ${document.activeElement?.textContent}`))
      .toBe('H1 Overview');
    expect(await page.getByRole('link', { name: 'Overview' }).getAttribute('aria-current')).toBe('page');
  });

  it('posts in a channel and shows the reply as it arrives', async () => {
    await page.goto(`${server.url}/ui/channels/support-1`);
    await page.locator('[role=status]', { hasText: 'live' }).waitFor();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('hello from the dashboard');
    await page.getByRole('button', { name: 'Post' }).click();
    await page.locator('li[data-role="user"]', { hasText: 'hello from the dashboard' }).waitFor();
    await page.locator('li[data-role="ai"]', { hasText: 'You said' }).waitFor({ timeout: 20_000 });
    expect(await page.title()).toBe('Channel support-1 · runledger');
    // the reply's tokens came over the socket as deltas before the stored message
    expect(Number(await page.locator('ol.chat').getAttribute('data-deltas'))).toBeGreaterThan(1);
  });
});

describe('the dashboard on the document pipeline (polls, a parallel step, business states)', () => {
  it('shows the state and progress live, the branch that failed, and retries that branch from the page', async () => {
    const mock = await startMockServices({ speed: 10 });
    const server = await serve(createSqlitePath(), [], { ...FAST, RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    const browser = await launchBrowser();
    try {
      const wf = await call(server, '/workflows', { method: 'POST', body: pipelineForTests() });
      // the PowerPoint job stays processing until the test cancels it: the run is in flight as long as the test needs
      mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'hang' }]);
      const page = await browser.newPage();
      await page.goto(`${server.url}/ui/workflows/${wf.id}`);
      await page
        .getByLabel('Trigger data (JSON)')
        .fill(JSON.stringify({ services: mock.url, content: '# Q3\nRevenue grew.' }));
      await page.getByRole('button', { name: 'Execute' }).click();
      await page.waitForURL(/\/ui\/runs\/ex_\w+$/);
      const first = new URL(page.url()).pathname.split('/').pop()!;

      await page.locator('[data-fact="state"]', { hasText: 'RENDERING_PROCESSING' }).waitFor({ timeout: 30_000 });
      await page.locator('tr[data-step="wait_word"][data-status="success"]').waitFor({ timeout: 30_000 });
      expect(await page.locator('dl.facts [data-status="running"]').count()).toBe(1);
      expect(await page.locator('[data-fact="progress"]').textContent()).toMatch(
        /\b([1-9]|1[0-2])\/13 steps ran: .*\b\d+ running\b/,
      );
      await page.locator('[data-fact="eta"]').waitFor();
      expect(await page.locator('tr[data-step="wait_powerpoint"]').getAttribute('data-status')).toBe('running');
      expect(
        await page
          .locator('tr[data-step="normalize"]')
          .evaluate((r) => [r.getAttribute('data-type'), r.getAttribute('data-status')]),
      ).toEqual(['poll', 'success']);
      await page.locator('figure.gantt rect.bar-poll.bar-running').first().waitFor();

      // the job is cancelled: the poll sees it, the PowerPoint branch fails, the run ends partly done
      const record = await call(server, `/workflows/${wf.id}/executions/${first}`);
      const job = record.steps.find((s: { step_id: string }) => s.step_id === 'render_powerpoint').output.body
        .render_job_id;
      expect((await fetch(`${mock.url}/v1/render/jobs/${job}/cancel`, { method: 'POST' })).status).toBe(200);
      await page.locator('dl.facts [data-status="partial_success"]').waitFor({ timeout: 30_000 });
      expect(await page.locator('[data-fact="state"]').textContent()).toBe('PARTIAL_COMPLETE');
      // what ran, counted from the steps the server reports: the failed branch's steps did run
      const ended = await call(server, `/workflows/${wf.id}/executions/${first}`);
      const leaves = ended.steps.filter((s: { type: string }) => s.type !== 'parallel');
      const ran = leaves.filter((s: { status: string }) =>
        ['success', 'failed', 'timed_out'].includes(s.status),
      ).length;
      expect(await page.locator('[data-fact="progress"]').textContent()).toContain(`${ran}/${leaves.length} steps ran`);
      expect(await page.locator('tr[data-step="wait_powerpoint"]').getAttribute('data-status')).toBe('failed');
      expect(
        await page
          .locator('tr[data-step="render"] li[data-branch]')
          .evaluateAll((items) =>
            items.map(
              (li) =>
                `${li.getAttribute('data-branch')} ${li.querySelector('[data-status]')!.getAttribute('data-status')}`,
            ),
          ),
      ).toEqual(['word success', 'powerpoint failed']);

      await page.getByRole('button', { name: 'Retry failed branches…' }).click();
      expect(await page.getByRole('checkbox', { name: 'powerpoint' }).isChecked()).toBe(true);
      await page.getByRole('button', { name: 'Retry branch' }).click();
      await page.waitForURL((url) => /\/ui\/runs\/ex_\w+$/.test(url.pathname) && !url.pathname.endsWith(first));
      const retry = new URL(page.url()).pathname.split('/').pop()!;
      await page.locator('dl.facts [data-status="success"]').waitFor({ timeout: 30_000 });
      await expect.poll(() => page.locator('[data-fact="state"]').textContent()).toBe('DELIVERED');
      // the steps taken from the first execution did no work here: counted and shown as reused, not as run
      const again = await call(server, `/workflows/${wf.id}/executions/${retry}`);
      const reused = again.steps.filter(
        (s: { type: string; input: { reused_from?: string } | null }) =>
          s.type !== 'parallel' && s.input?.reused_from === first,
      ).length;
      expect(reused).toBeGreaterThan(0);
      await expect.poll(() => page.locator('[data-fact="progress"]').textContent()).toContain(`${reused} reused`);
      expect(await page.locator('tr[data-step="render_word"] td').nth(2).textContent()).toBe('reused');
      expect(await page.locator('[data-fact="rerun-of"]').textContent()).toBe(
        `${first} (retry of branch powerpoint) · compare with the original`,
      );
      // the Word branch was reused, not rendered again
      expect(mock.calls({ method: 'POST', path: '/v1/render/documents' })).toHaveLength(1);
      expect(mock.calls({ method: 'POST', path: '/v1/render/presentations' })).toHaveLength(2);
      expect((await call(server, `/runs/${retry}`)).status).toBe('success');

      // and the first execution links to its retry
      await page.goBack();
      await page.locator('[data-fact="reruns"] a', { hasText: retry }).waitFor();
    } finally {
      await browser.close();
      server.proc.kill('SIGTERM');
      await server.exited;
      await mock.close();
    }
  }, 120_000);
});

describe('the dashboard on PostgreSQL, behind a token', () => {
  it('asks for the token once, then executes a workflow from its form to success', async () => {
    const token = 'ui-test-token-4c1d';
    const server = await serve(await createPostgresDatabase(), ['--sample'], { ...FAST, RUNLEDGER_TOKEN: token });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${server.url}/ui/workflows`);
      await page.getByRole('dialog').waitFor();
      await page.getByRole('textbox', { name: 'Token', exact: true }).fill(token);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByRole('link', { name: 'greet-and-log' }).click();
      await page.getByLabel('Trigger data (JSON)').fill('{"name":"Edsger"}');
      await page.getByRole('button', { name: 'Execute' }).click();
      await page.waitForURL(/\/ui\/runs\/ex_\w+$/);
      await page.locator('dl.facts [data-status="success"]').waitFor({ timeout: 20_000 });
      // the token is kept for the tab: a reload does not ask again
      await page.reload();
      await page.locator('dl.facts [data-status="success"]').waitFor();
      expect(await page.getByRole('dialog').isVisible()).toBe(false);
    } finally {
      await browser.close();
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  }, 60_000);
});

describe('the dashboard with 10,000 runs stored', () => {
  it('paints the newest page of the run list', async () => {
    const database = createSqlitePath();
    const engine = await createEngine({ database, workers: false });
    const ids: string[] = [];
    try {
      // 10,000 finished runs through the journal (their views are projected as for any run), 500 per transaction
      for (let batch = 0; batch < 20; batch++) {
        const appends = Array.from({ length: 500 }, (_, i) => {
          const id = newId('run');
          ids.push(id);
          const ok = (batch * 500 + i) % 10 !== 0;
          return {
            streamId: runStream(id),
            events: [
              {
                type: 'run.started',
                data: {
                  workflow: 'seeded',
                  input: { i: batch * 500 + i },
                  orderingKey: null,
                  deadline: null,
                  parent: null,
                },
              },
              ok
                ? { type: 'run.completed', data: { output: i } }
                : { type: 'run.failed', data: { error: 'seeded failure' } },
            ],
          };
        });
        await engine.journal.appendMany(appends);
      }
    } finally {
      await engine.close();
    }
    const server = await serve(database, [], FAST);
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      // one visit first, so the measured one has the assets cached as a returning user would
      await page.goto(`${server.url}/ui/overview`);
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      const started = Date.now();
      await page.goto(`${server.url}/ui/runs`);
      await page.locator('table.runs tbody tr[data-run]').nth(49).waitFor();
      const paintMs = Date.now() - started;
      // the newest run first (the last id generated; ties on the start time go by id)
      expect(await page.locator('table.runs tbody tr[data-run]').first().getAttribute('data-run')).toBe(ids.at(-1));
      expect(await page.locator('table.runs tbody tr[data-run]').count()).toBe(50);
      const filtered = Date.now();
      await page.getByLabel('Status').selectOption('failed');
      await page.locator('table.runs tbody tr[data-status="failed"]').nth(49).waitFor();
      const filterMs = Date.now() - filtered;
      expect(await page.locator('table.runs tbody tr[data-run]').count()).toBe(50);
      console.log(
        `run list with 10,000 runs stored: first page painted in ${paintMs} ms, filtered by status in ${filterMs} ms`,
      );
    } finally {
      await browser.close();
      server.proc.kill('SIGTERM');
      await server.exited;
    }
  }, 120_000);
});
