import { mkdirSync } from 'node:fs';
import { SAMPLE_RUN } from '../src/cli/sample.js';
import { createEngine } from '../src/engine.js';
import { TerminalError } from '../src/errors.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { startMockServices } from '../src/mock-services/index.js';
import { launchBrowser } from './browser.js';
import { serve, type Served } from './child.js';
import { pipelineForTests } from './pipeline.js';
import { uiWorkflowsModule } from './ui-workflows.js';

/**
 * Takes the screenshots of docs/screenshots/ from a real server with some history of every kind
 * (executions, code runs, agent runs with an approval waiting, the document pipeline partly done
 * and retried, a dead task, a schedule, a channel): `npm run build && npx tsx e2e/screenshots.ts`.
 * A page that throws, logs an error or gets a 4xx/5xx from the API fails it.
 */

const OUT = 'docs/screenshots';

async function call(server: Served, path: string, body?: unknown): Promise<any> {
  const res = await fetch(server.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function codeRun(server: Served, name: string, detail: Record<string, unknown> = {}): Promise<string> {
  await call(server, '/rules', {
    name: `start-${name}`,
    pattern: { source: ['shop'], 'detail-type': [name] },
    target: { workflow: name },
    input: '$.detail',
  }).catch(() => undefined);
  const event = await call(server, '/events', { source: 'shop', 'detail-type': name, detail });
  return eventually(
    async () =>
      (await call(server, `/events/${event.id}`)).matches.find((m: { run_id: string | null }) => m.run_id)?.run_id as
        | string
        | undefined,
    15_000,
  );
}

const database = createSqlitePath();
const engine = await createEngine({ database, workers: false });
const { task } = await engine.queue.enqueue('email', { to: 'ada@example', template: 'welcome' }, { maxAttempts: 3 });
engine.work('email', async () => {
  throw new TerminalError("invalid address 'ada@example': no domain");
});
await eventually(async () => (await engine.store.taskGet({ id: task.id })).state === 'dead', 15_000);
await engine.close();

const mock = await startMockServices({ speed: 10 });
const server = await serve(database, ['--sample', '--workflows', uiWorkflowsModule()], {
  RUNLEDGER_POLL_MS: '100',
  RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
});
const browser = await launchBrowser();
const problems: string[] = [];
try {
  const { workflows } = await call(server, '/workflows');
  const sample = workflows[0].id;
  for (const name of ['Grace', 'Edsger', 'Barbara'])
    await call(server, `/workflows/${sample}/execute`, { trigger_data: { name } });
  await codeRun(server, 'broken');
  await codeRun(server, 'book');
  await codeRun(server, 'nap');
  await call(server, '/schedules', {
    name: 'nightly-report',
    cron: '0 2 * * *',
    timezone: 'Europe/Paris',
    target: { workflow: 'nap' },
  });
  await call(server, '/channels/support-7/messages', {
    sender_id: 'ada',
    role: 'user',
    content: 'Where is my order A-1042?',
  });
  // the run README's picture shows is the one `npm start` shows a newcomer first: the sample run
  await eventually(async () => (await call(server, `/runs/${SAMPLE_RUN}`)).status === 'success', 30_000);

  // agent runs: one answered, one waiting for a person to approve a refund
  const agentEvent = (text: string, conversation: string) =>
    call(server, '/agent/events', {
      conversation_id: conversation,
      user_id: 'ada',
      source: 'whatsapp_webhook',
      input_type: 'text',
      payload: { text },
    });
  const answered = await agentEvent('Where is order 1042?', 'wa-ada');
  const refund = await agentEvent('Please refund order 1042, it arrived broken', 'wa-grace');
  await eventually(async () => (await call(server, `/agent/runs/${answered.run_id}`)).status === 'success', 30_000);
  await eventually(async () => (await call(server, '/agent/approvals')).tool_calls.length === 1, 30_000);

  // the document pipeline: the PowerPoint rendering fails, then its branch is retried
  const pipeline = await call(server, '/workflows', pipelineForTests());
  mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'fail', error: 'Image asset not found' }]);
  const partial = (
    await call(server, `/workflows/${pipeline.id}/execute`, {
      trigger_data: { services: mock.url, title: 'Q3 review', content: '# Q3\nRevenue grew.' },
    })
  ).execution_id;
  await eventually(async () => (await call(server, `/runs/${partial}`)).status === 'partial_success', 60_000);
  const retried = (
    await call(server, `/workflows/${pipeline.id}/executions/${partial}/retry`, { branches: ['powerpoint'] })
  ).execution_id;
  await eventually(async () => (await call(server, `/runs/${retried}`)).status === 'success', 60_000);
  mkdirSync(OUT, { recursive: true });

  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on('pageerror', (error) => problems.push(`${page.url()}: ${error.message}`));
  page.on(
    'console',
    (message) => message.type() === 'error' && problems.push(`${page.url()}: console: ${message.text()}`),
  );
  page.on(
    'response',
    (response) =>
      response.status() >= 400 &&
      problems.push(`${page.url()}: ${response.request().method()} ${response.url()} answered ${response.status()}`),
  );
  const shot = async (path: string, name: string, ready: string) => {
    await page.goto(`${server.url}/ui${path}`);
    await page.locator(ready).first().waitFor();
    // a stored workflow shows its id until its name is read (one read of /workflows per page load)
    await page.waitForFunction(() => !document.querySelector('a[data-workflow-id]:not(.workflow-name)'));
    await page.screenshot({ path: `${OUT}/${name}.png`, fullPage: false });
  };
  await shot('/runs', 'runs', 'table.runs tbody tr[data-run]');
  await shot(`/runs/${SAMPLE_RUN}`, 'run', 'figure.gantt rect');
  await shot(`/workflows/${sample}`, 'workflow', 'pre.code');
  await page.goto(`${server.url}/ui/workflows/new`);
  await page.getByLabel('Definition (JSON)').fill(
    JSON.stringify(
      {
        name: '',
        steps: [
          { id: 'fetch', type: 'http_request', config: { method: 'FETCH' } },
          { id: 'fetch', type: 'teleport' },
        ],
      },
      null,
      2,
    ),
  );
  const before = problems.length;
  await page.getByRole('button', { name: 'Create' }).click();
  await page.locator('ul.problems li').first().waitFor();
  await page.screenshot({ path: `${OUT}/workflow-errors.png` });
  problems.splice(before); // the 400 this definition gets is the point
  await shot('/dead', 'dead-letters', 'tr[data-task]');
  await page.goto(`${server.url}/ui/channels/support-7`);
  await page.locator('li[data-role="ai"]').waitFor();
  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Thanks! Can you ship it faster?');
  await page.getByRole('button', { name: 'Post' }).click();
  await page.locator('li[data-role="ai"]').nth(1).waitFor();
  await page.screenshot({ path: `${OUT}/channel.png` });
  await shot('/triggers', 'triggers', 'h2');
  await shot('/overview', 'overview', '.tiles');
  await shot('/agents', 'agents', 'ul.approvals li');
  await shot(`/agents/${answered.run_id}`, 'agent-run', 'table.tool-calls tbody tr');
  await shot(`/runs/${partial}`, 'pipeline-partial', '[data-fact="state"]');
  await page.getByRole('button', { name: 'Retry failed branches…' }).click();
  await page.screenshot({ path: `${OUT}/pipeline-partial.png` });
  await shot(`/runs/${retried}`, 'pipeline-retried', '[data-fact="rerun-of"]');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(`/runs/${SAMPLE_RUN}`, 'run-dark', 'figure.gantt rect');
  // every other page once, for what it logs
  for (const path of [
    '/runs?kind=session',
    `/runs/${refund.run_id}`,
    `/runs/${answered.run_id}`,
    `/agents/${refund.run_id}`,
    `/workflows/${pipeline.id}`,
    `/workflows/${pipeline.id}/edit`,
    '/channels',
  ]) {
    await page.goto(`${server.url}/ui${path}`);
    await page.locator('h1').waitFor();
    await page.waitForLoadState('networkidle', { timeout: 1500 }).catch(() => undefined);
  }
  if (problems.length) throw new Error(`the pages reported problems:\n${problems.join('\n')}`);
  console.log(`screenshots in ${OUT}/`);
} finally {
  await browser.close();
  server.proc.kill('SIGTERM');
  await server.exited;
  await mock.close();
}
