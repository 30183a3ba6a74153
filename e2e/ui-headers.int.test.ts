import { mkdtempSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflow } from '../src/runtime/workflow.js';
import { uiDir } from '../src/server/ui.js';
import { startServer, type Server } from '../src/server/start.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { launchBrowser } from './browser.js';

/**
 * The dashboard's Content-Security-Policy and anti-framing headers in Chromium: the built dashboard
 * (dist/ui: `npm run build:ui`) served by a server in this process, every page visited and watched
 * for a CSP violation, and a page of another origin trying to frame it.
 */

const gated = workflow('gated', async (ctx) => {
  await ctx.step('before', async () => 1);
  return { go: await ctx.waitForEvent<{ ok: boolean }>('go') };
});

interface Seen {
  violations: string[];
  console: string[];
}

/** Records CSP violations (the DOM event, from before the page's first script) and console errors of `page`. */
async function watchPage(page: Page): Promise<Seen> {
  const seen: Seen = { violations: [], console: [] };
  await page.exposeFunction('__cspViolation', (text: string) => seen.violations.push(text));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      (window as unknown as { __cspViolation(text: string): void }).__cspViolation(
        `${e.effectiveDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`,
      ),
    );
  });
  page.on('console', (message) => message.type() === 'error' && seen.console.push(message.text()));
  page.on('pageerror', (error) => seen.console.push(error.message));
  return seen;
}

describe('the dashboard in Chromium under its Content-Security-Policy', () => {
  let server: Server;
  let browser: Browser;
  let framer: HttpServer;
  const call = async (path: string, body?: unknown) => {
    const res = await fetch(
      server.url + path,
      body === undefined
        ? {}
        : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
    );
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };

  beforeAll(async () => {
    if (!uiDir()) throw new Error('dist/ui is missing: npm run build:ui');
    server = await startServer({
      database: createSqlitePath(),
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-ui-headers-')),
      logger: pino({ level: 'silent' }),
      pollMs: 100,
      codeWorkflows: [gated],
    });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((done) => (framer ? framer.close(done) : done(undefined)));
    await server?.close();
  });

  it('renders every page, the live ones included, with no CSP violation and no console error', async () => {
    const stored = await call('/workflows', {
      name: 'csp-check',
      steps: [{ id: 'hello', type: 'log', config: { message: 'hi {{trigger.name}}' } }],
    });
    const execution = await call(`/workflows/${stored.id}/execute`, { trigger_data: { name: 'Ada' } });
    const waiting = (await server.engine.start(gated, {})).id;
    await call('/rules', { name: 'csp-rule', pattern: { source: ['csp'] }, target: { workflow: 'gated' } });
    await call('/channels/csp-1/messages', { sender_id: 'u1', role: 'user', content: 'hello' });
    const agent = await call('/agent/events', {
      conversation_id: 'csp-conv',
      user_id: 'u1',
      source: 'csp',
      input_type: 'text',
      payload: { text: 'where is order 1042?' },
    });
    await eventually(
      async () => ['success', 'failed'].includes((await call(`/agent/runs/${agent.run_id}`)).status),
      20_000,
    );

    const pages: Array<[string, string]> = [
      ['/ui/', `table.runs tr[data-run="${execution.execution_id}"]`],
      ['/ui/runs', `table.runs tr[data-run="${waiting}"]`],
      [`/ui/runs/${execution.execution_id}`, 'ol.journal li'],
      [`/ui/runs/${waiting}`, 'ol.journal li'],
      ['/ui/workflows', `a[href="/ui/workflows/${stored.id}"]`],
      [`/ui/workflows/${stored.id}`, 'ol.versions li'],
      [`/ui/workflows/${stored.id}/edit`, 'h1:text("Edit csp-check")'],
      ['/ui/workflows/new', 'h1:text("New workflow")'],
      ['/ui/dead', 'h1:text("Dead letters")'],
      ['/ui/triggers', 'text=csp-rule'],
      ['/ui/channels', 'a[href="/ui/channels/csp-1"]'],
      ['/ui/channels/csp-1', '[role=status]:text("live")'],
      ['/ui/agents', `table.agent-runs tr[data-run="${agent.run_id}"]`],
      [`/ui/agents/${agent.run_id}`, 'table.agent-steps tbody tr'],
      ['/ui/overview', '.tiles'],
      ['/ui/audit', 'table.audit tbody tr'],
      ['/ui/no/such/page', 'h1:text("Not found")'],
    ];
    const page = await browser.newPage();
    const seen = await watchPage(page);
    const sockets: string[] = [];
    page.on('websocket', (ws) => sockets.push(ws.url()));
    for (const [path, ready] of pages) {
      await page.goto(server.url + path);
      await page.locator(ready).first().waitFor({ timeout: 15_000 });
      await expect.poll(() => page.locator('[aria-busy="true"]').count(), { message: path }).toBe(0);
      expect(seen, path).toEqual({ violations: [], console: [] });
    }
    // the channel page went live over its WebSocket: CSP 3's 'self' covers ws: of the same host
    expect(sockets.map((url) => url.replace(/\?.*/, ''))).toEqual([
      `${server.url.replace('http:', 'ws:')}/channels/csp-1/ws`,
    ]);
    await page.close();
  }, 120_000);

  it('sends its own Origin with a state change, which a same-origin check lets through', async () => {
    const { id } = await server.engine.start(gated, {});
    const page = await browser.newPage();
    const seen = await watchPage(page);
    await page.goto(`${server.url}/ui/runs/${id}`);
    await page.locator('dl.facts [data-status="waiting"]').waitFor({ timeout: 15_000 });
    const cancel = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname.endsWith('/cancel'));
    // the button asks first (issue 42): the cancel is sent from its dialog
    await page.getByRole('button', { name: 'Cancel run…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel run', exact: true }).click();
    expect((await (await cancel).allHeaders()).origin).toBe(server.url);
    await page.locator('dl.facts [data-status="cancelled"]').waitFor({ timeout: 15_000 });
    expect(seen).toEqual({ violations: [], console: [] });
    await page.close();
  });

  it('cannot be framed by a page of another origin', async () => {
    framer = createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<!doctype html><title>decoy</title><iframe id="f" src="${server.url}/ui/runs"></iframe>`),
    );
    await new Promise<void>((done) => framer.listen(0, '127.0.0.1', done));
    const origin = `http://127.0.0.1:${(framer.address() as AddressInfo).port}`;
    const page = await browser.newPage();
    const messages: string[] = [];
    page.on('console', (message) => messages.push(message.text()));
    const framed = page.waitForEvent('framenavigated', (frame) => frame !== page.mainFrame());
    await page.goto(origin);
    const frame = await framed;
    await page
      .locator('#f')
      .evaluate(
        (f: HTMLIFrameElement) =>
          new Promise((done) =>
            f.contentDocument === null || f.contentDocument.readyState === 'complete'
              ? done(null)
              : f.addEventListener('load', done),
          ),
      );
    // the dashboard never ran inside: no app, no title of its own, and Chromium says why
    expect(await frame.locator('#app').count()).toBe(0);
    expect(frame.url()).not.toBe(`${server.url}/ui/runs`);
    await expect.poll(() => messages.join('\n')).toMatch(/frame-ancestors 'none'/);
    await page.close();
  });
});
