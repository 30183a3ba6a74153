import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { mountUi } from './ui.js';

/** A stand-in for `vite build`'s output: an index page and one hashed asset. */
function builtUi(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rl-ui-headers-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>runledger</title><div id="app"></div>');
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
  return dir;
}

/** The policy e2e/ui-headers.int.test.ts checks the built dashboard against in Chromium. */
const EXPECTED = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

describe('the dashboard’s headers', () => {
  it.each([
    ['GET', '/ui/', 200],
    ['GET', '/ui/index.html', 200],
    ['GET', '/ui/assets/index-abc123.js', 200],
    ['HEAD', '/ui/assets/index-abc123.js', 200],
    ['GET', '/ui/runs/ex_01J0000000000000000000000', 200],
    ['GET', '/ui/assets/index-gone.js', 404],
    ['GET', '/ui/nope.png', 404],
    ['GET', '/ui/%E0%A4%A', 404],
    ['POST', '/ui/runs', 404],
    ['GET', '/ui', 301],
    ['GET', '/', 302],
  ])('are on %s %s (%i)', async (method, path, status) => {
    const app = new Hono();
    mountUi(app, builtUi());
    const res = await app.fetch(new Request(`http://local${path}`, { method }));
    expect(res.status).toBe(status);
    for (const [name, value] of Object.entries(EXPECTED)) expect(res.headers.get(name), name).toBe(value);
  });

  it('are on the answer when the dashboard is not built', async () => {
    const app = new Hono();
    mountUi(app, null);
    const res = await app.fetch(new Request('http://local/ui/runs'));
    expect(res.status).toBe(404);
    for (const [name, value] of Object.entries(EXPECTED)) expect(res.headers.get(name), name).toBe(value);
  });
});
