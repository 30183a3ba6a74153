import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { WebSocket } from 'ws';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Channels } from '../chat/channels.js';
import { ChannelFeed } from '../chat/feed.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { type WorkflowService } from '../workflows/service.js';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from './app.js';
import { listen } from './listen.js';
import { ChannelSockets } from './ws.js';

const SECRET = JSON.stringify({ name: 'api_key', value: 'attacker' });

describe.each(backends)('what a web page may ask of the API on $name', (backend) => {
  let workflows: WorkflowService;
  let app: Hono;
  let withToken: Hono;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    workflows = storedWorkflows(t.engine, { secretKey: randomBytes(32) });
    app = createApp({ engine: t.engine, workflows, uiDir: null, allowedOrigins: ['https://ops.example.com'] });
    withToken = createApp({ engine: t.engine, workflows, uiDir: null, token: 'tok' });
    await workflows.secrets.set('api_key', 'original');
    close = t.close;
  });
  afterEach(() => close());

  /** As a browser at 127.0.0.1:8080 would send it, with `headers` on top. */
  const send = async (method: string, path: string, headers: Record<string, string>, body?: string, on = app) => {
    const res = await on.fetch(
      new Request(`http://127.0.0.1:8080${path}`, {
        method,
        headers: { host: '127.0.0.1:8080', ...headers },
        ...(body !== undefined ? { body } : {}),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const stored = async () => (await workflows.secrets.values()).api_key;

  it('refuses a JSON body sent as text/plain or with no type, naming the header; takes application/json and application/*+json with parameters', async () => {
    const plain = await send('POST', '/secrets', { 'content-type': 'text/plain;charset=UTF-8' }, SECRET);
    expect(plain).toEqual({
      status: 415,
      body: {
        error: {
          code: 'unsupported_media_type',
          message:
            "content-type: 'text/plain;charset=UTF-8' is not JSON; a request body is accepted as application/json (or application/*+json, with parameters such as charset)",
        },
      },
    });
    const form = await send('POST', '/secrets', { 'content-type': 'application/x-www-form-urlencoded' }, SECRET);
    expect(form.status).toBe(415);
    const untyped = await app.fetch(
      new Request('http://127.0.0.1:8080/secrets', {
        method: 'POST',
        headers: { host: '127.0.0.1:8080' },
        body: new Blob([SECRET]),
      }),
    );
    expect(untyped.status).toBe(415);
    expect(((await untyped.json()) as { error: { message: string } }).error.message).toMatch(
      /^content-type: missing; /,
    );
    expect(await stored()).toBe('original');

    expect((await send('POST', '/secrets', { 'content-type': 'application/json; charset=utf-8' }, SECRET)).status).toBe(
      201,
    );
    expect(
      (
        await send(
          'POST',
          '/secrets',
          { 'content-type': 'Application/Merge-Patch+JSON' },
          JSON.stringify({ name: 'api_key', value: 'v3' }),
        )
      ).status,
    ).toBe(201);
    expect(await stored()).toBe('v3');
  });

  it('needs no content type for an empty body', async () => {
    const wf = await send(
      'POST',
      '/workflows',
      { 'content-type': 'application/json' },
      JSON.stringify({ name: 'w', steps: [{ id: 'n', type: 'log', config: { message: 'hi' } }] }),
    );
    const run = await send(
      'POST',
      `/workflows/${wf.body.id}/execute`,
      { 'content-type': 'application/json' },
      JSON.stringify({ trigger_data: {} }),
    );
    const rerun = await send('POST', `/workflows/${wf.body.id}/executions/${run.body.execution_id}/rerun`, {});
    expect(rerun).toMatchObject({ status: 202, body: { workflow_id: wf.body.id } });
  });

  it('refuses a state change from another origin with 403 and stores nothing; GETs and requests without Origin pass', async () => {
    for (const [method, path] of [
      ['POST', '/secrets'],
      ['PUT', '/workflows/wf_x'],
      ['DELETE', '/secrets/api_key'],
      ['PATCH', '/secrets'],
    ] as const) {
      const refused = await send(
        method,
        path,
        { 'content-type': 'application/json', origin: 'https://evil.example' },
        method === 'DELETE' ? undefined : SECRET,
      );
      expect(refused).toEqual({
        status: 403,
        body: {
          error: {
            code: 'cross_site_refused',
            message: `${method} from origin 'https://evil.example' refused: a web page may act only from this server's own origin (http://127.0.0.1:8080) or one in RUNLEDGER_ALLOWED_ORIGINS; add it there to allow it, or require RUNLEDGER_TOKEN`,
          },
        },
      });
    }
    // another port on loopback is another origin (and the same site)
    expect(
      (
        await send(
          'POST',
          '/secrets',
          { 'content-type': 'application/json', origin: 'http://127.0.0.1:3000', 'sec-fetch-site': 'same-site' },
          SECRET,
        )
      ).status,
    ).toBe(403);
    expect(await stored()).toBe('original');
    expect((await send('GET', '/secrets', { origin: 'https://evil.example' })).status).toBe(200);
    expect((await send('POST', '/secrets', { 'content-type': 'application/json' }, SECRET)).status).toBe(201);
  });

  it('refuses Sec-Fetch-Site: cross-site without an Origin', async () => {
    const refused = await send(
      'POST',
      '/secrets',
      { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
      SECRET,
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain('Sec-Fetch-Site: cross-site');
    expect(await stored()).toBe('original');
  });

  it('takes a state change from its own origin, from an allowed one, and from any origin with the token', async () => {
    expect(
      (
        await send(
          'POST',
          '/secrets',
          { 'content-type': 'application/json', origin: 'http://127.0.0.1:8080', 'sec-fetch-site': 'same-origin' },
          JSON.stringify({ name: 'api_key', value: 'own' }),
        )
      ).status,
    ).toBe(201);
    expect(await stored()).toBe('own');
    expect(
      (
        await send(
          'POST',
          '/secrets',
          { 'content-type': 'application/json', origin: 'https://ops.example.com', 'sec-fetch-site': 'cross-site' },
          JSON.stringify({ name: 'api_key', value: 'ops' }),
        )
      ).status,
    ).toBe(201);
    expect(await stored()).toBe('ops');
    const authorized = {
      'content-type': 'application/json',
      origin: 'https://elsewhere.example',
      'sec-fetch-site': 'cross-site',
      authorization: 'Bearer tok',
    };
    expect(
      (await send('POST', '/secrets', authorized, JSON.stringify({ name: 'api_key', value: 'token' }), withToken))
        .status,
    ).toBe(201);
    expect(await stored()).toBe('token');
    expect(
      (await send('POST', '/secrets', { ...authorized, authorization: 'Bearer nope' }, SECRET, withToken)).status,
    ).toBe(401);
  });

  it('answers a foreign Host only when a token is required: a rebound DNS name reads nothing', async () => {
    for (const method of ['GET', 'POST']) {
      const refused = await send(
        method,
        '/secrets',
        { host: 'evil.example:8080', 'content-type': 'application/json', origin: 'http://evil.example:8080' },
        method === 'POST' ? SECRET : undefined,
      );
      expect(refused.status).toBe(421);
      expect(refused.body.error).toMatchObject({
        code: 'host_refused',
        message: expect.stringMatching(
          /^Host 'evil\.example:8080' is not a name of this server: .* add its origin to RUNLEDGER_ALLOWED_ORIGINS$/,
        ),
      });
    }
    expect(await stored()).toBe('original');
    expect((await send('GET', '/secrets', { host: 'localhost:8080' })).status).toBe(200);
    expect((await send('GET', '/secrets', { host: 'ops.example.com' })).status).toBe(200);
    expect(
      (await send('GET', '/secrets', { host: 'evil.example:8080', authorization: 'Bearer tok' }, undefined, withToken))
        .status,
    ).toBe(200);
  });

  it('leaves /callbacks to its own token: another origin and another content type reach the route', async () => {
    const answer = await send(
      'POST',
      '/callbacks/cb_unknown',
      { 'content-type': 'text/plain', origin: 'https://service.example', 'sec-fetch-site': 'cross-site' },
      '{"ok":true}',
    );
    expect(answer.status).toBe(404);
  });
});

/** How a server answers an upgrade with these headers: opened, or refused with a status and body. */
function upgrade(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), { headers });
    ws.once('open', () => {
      ws.close();
      resolve({ status: 101, body: '' });
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', reject);
  });
}

describe.each(backends)('what a web page may open as a WebSocket on $name', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const serve = async (token?: string) => {
    const t = await testEngine(backend);
    const channels = new Channels(t.engine.store, t.engine.journal);
    const feed = await ChannelFeed.open(t.engine.journal, channels);
    const sockets = new ChannelSockets({ channels, feed, token, allowedOrigins: ['https://ops.example.com'] });
    const listening = await listen(new Hono(), { host: '127.0.0.1', port: 0, upgrade: sockets.upgrade });
    cleanups.push(async () => {
      sockets.close();
      await listening.close();
      await feed.close();
      await t.close();
    });
    return listening.url;
  };

  it('refuses another origin and a foreign Host before the handshake; opens for its own origin, an allowed one, no origin, and the token', async () => {
    const url = await serve();
    const own = url.replace('localhost', '127.0.0.1');
    const refused = await upgrade(`${url}/channels/lobby/ws`, { origin: 'https://evil.example' });
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error).toEqual({
      code: 'cross_site_refused',
      message: expect.stringMatching(
        /^WebSocket upgrade from origin 'https:\/\/evil\.example' refused: .* RUNLEDGER_ALLOWED_ORIGINS/,
      ),
    });
    expect(
      (await upgrade(`${url}/channels/lobby/ws`, { origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site' }))
        .status,
    ).toBe(403);
    expect((await upgrade(`${url}/channels/lobby/ws`, { 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const rebound = await upgrade(`${url}/channels/lobby/ws`, { host: 'evil.example', origin: 'http://evil.example' });
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.body).error.code).toBe('host_refused');

    expect((await upgrade(`${url}/channels/lobby/ws`, { origin: own })).status).toBe(101);
    expect((await upgrade(`${url}/channels/lobby/ws`, { origin: 'https://ops.example.com' })).status).toBe(101);
    expect((await upgrade(`${url}/channels/lobby/ws`, {})).status).toBe(101);
    const withToken = await serve('tok');
    expect(
      (
        await upgrade(`${withToken}/channels/lobby/ws?token=tok`, {
          origin: 'https://evil.example',
          host: 'evil.example',
        })
      ).status,
    ).toBe(101);
  });
});
