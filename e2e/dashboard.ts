import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { createSqlitePath } from '../src/testing/databases.js';
import { launchBrowser } from './browser.js';
import { serve, type Served } from './child.js';

/** A JSON call to a served API: POST with `body`, else GET; a non-2xx answer throws with its text. */
export async function call(server: Served, path: string, body?: unknown): Promise<any> {
  const res = await fetch(server.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** A dashboard test's server and browser page, ready in its `beforeAll` and closed in its `afterAll`. */
export interface Dashboard {
  server: Served;
  page: Page;
}

/**
 * Registers the hooks that serve a fresh SQLite database (`args` and `env` for `runledger serve`) and open a page of a
 * headless chromium on it, for the describe block it is called in.
 *
 * @example const ui = useDashboard(); it('…', async () => { await ui.page.goto(`${ui.server.url}/ui`); });
 */
export function useDashboard(args: string[] = [], env: Record<string, string> = {}): Dashboard {
  const ui = {} as Dashboard;
  let browser: Browser | undefined;
  beforeAll(async () => {
    ui.server = await serve(createSqlitePath(), args, { RUNLEDGER_POLL_MS: '100', ...env });
    browser = await launchBrowser();
    ui.page = await browser.newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    ui.server?.proc.kill('SIGTERM');
    await ui.server?.exited;
  });
  return ui;
}
