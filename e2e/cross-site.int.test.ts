import { mkdtempSync } from 'node:fs';
import { createServer, request as httpRequest, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type Server } from '../src/server/start.js';
import { backends } from '../src/testing/backends.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { launchBrowser } from './browser.js';
import { cli, serve } from './child.js';

/**
 * A page of another origin, in a real browser, tries what a page its user happens to open could
 * try against a server on 127.0.0.1 without a token: every attempt fails and nothing changes.
 */

/** The attacker's page: each attempt against `target`, then `window.done` holds what the page could see. */
function attackerPage(target: string): string {
  const script = `
    const target = ${JSON.stringify(target)};
    const seen = {};
    const attempt = async (name, fn) => { try { seen[name] = await fn(); } catch (e) { seen[name] = 'threw ' + e.name; } };
    (async () => {
      await attempt('text/plain fetch', () => fetch(target + '/secrets', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ name: 'api_key', value: 'from-fetch' }) }).then((r) => r.type));
      await attempt('json fetch', () => fetch(target + '/secrets', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'json_key', value: 'from-json' }) }).then((r) => r.status));
      await attempt('pause', () => fetch(target + '/operator/pause', { method: 'POST', mode: 'no-cors', body: JSON.stringify({ kind: 'queue', name: 'default', by: 'page', reason: 'page' }) }).then((r) => r.type));
      await attempt('form', () => new Promise((resolve) => {
        const sink = document.createElement('iframe');
        sink.name = 'sink';
        sink.onload = () => resolve('submitted');
        document.body.appendChild(sink);
        const form = document.createElement('form');
        Object.assign(form, { method: 'POST', action: target + '/secrets', enctype: 'text/plain', target: 'sink' });
        const field = document.createElement('input');
        // text/plain encodes name=value: the "=" lands inside the JSON string
        Object.assign(field, { type: 'hidden', name: '{"name":"form_key","value":"from-form', value: '"}' });
        form.appendChild(field);
        document.body.appendChild(form);
        form.submit();
      }));
      await attempt('websocket', () => new Promise((resolve) => {
        const frames = [];
        let opened = false;
        const ws = new WebSocket(target.replace('http', 'ws') + '/channels/' + new URLSearchParams(location.search).get('channel') + '/ws');
        ws.onopen = () => {
          opened = true;
          ws.send(JSON.stringify({ type: 'post', message: { sender_id: 'page', role: 'system', content: 'from-socket' } }));
        };
        ws.onmessage = (event) => {
          frames.push(JSON.parse(event.data).type);
          if (frames.includes('posted')) ws.close();
        };
        ws.onclose = () => resolve({ opened, frames });
      }));
      window.done = seen;
    })();`;
  return `<!doctype html><html><body><script>${script}</script></body></html>`;
}

describe.each(backends)('a page of another origin against a server without a token on $name', (backend) => {
  let server: Server;
  let attacker: HttpServer;
  let attackerPort: number;
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer({
      database: await backend.create(),
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-cross-site-')),
      logger: pino({ level: 'silent' }),
      pollMs: 100,
    });
    attacker = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end(attackerPage(server.url)),
    );
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    attackerPort = (attacker.address() as AddressInfo).port;
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    attacker?.close();
    await server?.close();
  });

  // localhost is another site than 127.0.0.1; another port of 127.0.0.1 is the same site, another origin
  it.each([['localhost'], ['127.0.0.1']])(
    'from http://%s:<another port>: no secret written, nothing paused, no message read or posted',
    async (host) => {
      await server.workflows.secrets.set('api_key', 'original');
      const channel = `from-${host.replace(/\./g, '-')}`;
      await server.channels.post(channel, { sender_id: 'ada', role: 'system', content: 'private history' });
      const page = await browser.newPage();
      let seen: unknown;
      try {
        await page.goto(`http://${host}:${attackerPort}/?channel=${channel}`);
        seen = await page
          .waitForFunction(() => (window as unknown as { done?: unknown }).done, undefined, { timeout: 20_000 })
          .then((handle) => handle.jsonValue());
      } finally {
        await page.close();
      }
      // each attempt writes where the others do not: any one that got through shows here
      expect(await server.workflows.secrets.values()).toEqual({ api_key: 'original' });
      expect(await server.engine.operator.pauses()).toEqual([]);
      expect((await server.channels.history(channel)).messages.map((m) => m.content)).toEqual(['private history']);
      // what the page saw: opaque answers, a failed preflight, and a socket that never opened (it read no history)
      expect(seen).toEqual({
        'text/plain fetch': 'opaque',
        'json fetch': 'threw TypeError',
        pause: 'opaque',
        form: 'submitted',
        websocket: { opened: false, frames: [] },
      });
    },
  );
});

describe('the origins a server allows besides its own', () => {
  it('lets a listed origin act and answer under its host name, refuses the rest, and a bad entry stops serve naming the variable', async () => {
    const server = await serve(createSqlitePath(), [], {
      RUNLEDGER_ALLOWED_ORIGINS: 'https://ops.example.com, http://localhost:5173',
    });
    try {
      const post = (headers: Record<string, string>) =>
        fetch(`${server.url}/secrets`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ name: 'k', value: 'v' }),
        });
      expect((await post({ origin: 'https://ops.example.com' })).status).toBe(201);
      expect((await post({ origin: 'http://localhost:5173' })).status).toBe(201);
      expect((await post({ origin: 'https://evil.example' })).status).toBe(403);
      // a proxy that keeps the listed name as Host: answered, not taken for a rebound name
      const proxied = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.url}/secrets`, { headers: { host: 'ops.example.com' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject).end();
      });
      expect(proxied).toBe(200);
    } finally {
      server.proc.kill('SIGTERM');
      await server.exited;
    }
    const bad = cli(['serve', '--port', '0', '--database', createSqlitePath()], {
      RUNLEDGER_ALLOWED_ORIGINS: 'https://ops.example.com/ui',
      RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-serve-')),
    });
    expect((await bad.exited).code).not.toBe(0);
    expect(bad.output()).toContain(
      "RUNLEDGER_ALLOWED_ORIGINS: 'https://ops.example.com/ui' is not an origin: write scheme://host[:port] with no path",
    );
  });

  it("counts the public URL's origin as allowed: a page served under it may act, and its host is answered", async () => {
    const server = await startServer({
      database: createSqlitePath(),
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-cross-site-')),
      logger: pino({ level: 'silent' }),
      publicUrl: 'https://runledger.example.com/api',
    });
    try {
      const post = (origin: string) =>
        fetch(`${server.url}/secrets`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', origin },
          body: JSON.stringify({ name: 'k', value: 'v' }),
        });
      expect((await post('https://runledger.example.com')).status).toBe(201);
      expect((await post('https://other.example.com')).status).toBe(403);
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.url}/secrets`, { headers: { host: 'runledger.example.com' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject).end();
      });
      expect(status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
