import { mkdirSync } from 'node:fs';
import { createEngine } from '../src/engine.js';
import { TerminalError } from '../src/errors.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { launchBrowser } from './browser.js';
import { serve, type Served } from './child.js';
import { uiWorkflowsModule } from './ui-workflows.js';

/**
 * Takes the screenshots of docs/screenshots/ from a real server with some history:
 * `npm run build && npx tsx e2e/screenshots.ts`.
 */

const OUT = 'docs/screenshots';

async function call(server: Served, path: string, body?: unknown): Promise<any> {
  const res = await fetch(server.url + path, { method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function codeRun(server: Served, name: string, detail: Record<string, unknown> = {}): Promise<string> {
  await call(server, '/rules', { name: `start-${name}`, pattern: { source: ['shop'], 'detail-type': [name] }, target: { workflow: name }, input: '$.detail' }).catch(() => undefined);
  const event = await call(server, '/events', { source: 'shop', 'detail-type': name, detail });
  return eventually(async () => (await call(server, `/events/${event.id}`)).matches.find((m: { run_id: string | null }) => m.run_id)?.run_id as string | undefined, 15_000);
}

const database = createSqlitePath();
const engine = await createEngine({ database, workers: false });
const { task } = await engine.queue.enqueue('email', { to: 'ada@example', template: 'welcome' }, { maxAttempts: 3 });
engine.work('email', async () => {
  throw new TerminalError("invalid address 'ada@example': no domain");
});
await eventually(async () => (await engine.store.taskGet({ id: task.id })).state === 'dead', 15_000);
await engine.close();

const server = await serve(database, ['--sample', '--workflows', uiWorkflowsModule()], { RUNLEDGER_POLL_MS: '100' });
const browser = await launchBrowser();
try {
  const { workflows } = await call(server, '/workflows');
  const sample = workflows[0].id;
  for (const name of ['Grace', 'Edsger', 'Barbara']) await call(server, `/workflows/${sample}/execute`, { trigger_data: { name } });
  await codeRun(server, 'broken');
  const showcase = await codeRun(server, 'showcase', { order: 'A-1042' });
  await codeRun(server, 'nap');
  await call(server, '/schedules', { name: 'nightly-report', cron: '0 2 * * *', timezone: 'Europe/Paris', target: { workflow: 'nap' } });
  await call(server, '/channels/support-7/messages', { sender_id: 'ada', role: 'user', content: 'Where is my order A-1042?' });
  await eventually(async () => (await call(server, `/runs/${showcase}`)).status === 'success', 30_000);
  mkdirSync(OUT, { recursive: true });

  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const shot = async (path: string, name: string, ready: string) => {
    await page.goto(`${server.url}/ui${path}`);
    await page.locator(ready).first().waitFor();
    await page.screenshot({ path: `${OUT}/${name}.png`, fullPage: false });
  };
  await shot('/runs', 'runs', 'table.runs tbody tr[data-run]');
  await shot(`/runs/${showcase}`, 'run', 'figure.gantt rect');
  await shot('/workflows/' + sample, 'workflow', 'pre.code');
  await page.goto(`${server.url}/ui/workflows/new`);
  await page.getByLabel('Definition (JSON)').fill(JSON.stringify({ name: '', steps: [{ id: 'fetch', type: 'http_request', config: { method: 'FETCH' } }, { id: 'fetch', type: 'teleport' }] }, null, 2));
  await page.getByRole('button', { name: 'Create' }).click();
  await page.locator('ul.problems li').first().waitFor();
  await page.screenshot({ path: `${OUT}/workflow-errors.png` });
  await shot('/dead', 'dead-letters', 'tr[data-task]');
  await page.goto(`${server.url}/ui/channels/support-7`);
  await page.locator('li[data-role="ai"]').waitFor();
  await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Thanks! Can you ship it faster?');
  await page.getByRole('button', { name: 'Post' }).click();
  await page.locator('li[data-role="ai"]').nth(1).waitFor();
  await page.screenshot({ path: `${OUT}/channel.png` });
  await shot('/triggers', 'triggers', 'h2');
  await shot('/overview', 'overview', '.tiles');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(`/runs/${showcase}`, 'run-dark', 'figure.gantt rect');
  console.log(`screenshots in ${OUT}/`);
} finally {
  await browser.close();
  server.proc.kill('SIGTERM');
  await server.exited;
}
