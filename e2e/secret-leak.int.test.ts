import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findLeaks, grepSecrets, secretVariants, type Haystack } from '../chaos/secret-grep.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve, type Served } from './child.js';

/**
 * Spaces, quotes, backslashes, non-ASCII, URL and HTML metacharacters; B and C are Latin-1, so they can
 * go in headers. B is kept out of URLs: its `#` and `?` would split it there (the part after a `#` is
 * not sent, the part before is not the secret, and no masking can know it is a piece of one).
 */
const A = 'Sp ace "Quo\'te" \\Back\\slash ÜnïcØdé ✓ alpha-1';
const B = 'tok\'en<&>with/slash?and#hash+plus=eq;semi "q" \\ bé';
const C = 'plainTokenXYZ987654321';
const PLANTED = [A, B, C];
const PG_DUMP = '/usr/lib/postgresql/15/bin/pg_dump';

/**
 * Answers every request with what it received: `/echo` as JSON, `/text` as text, `/html` HTML-escaped,
 * `/b64` the Authorization header inside base64 at three alignments, `/fail` a 500 echoing the headers.
 */
function echoServer(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const seen = { method: req.method, url: req.url, headers: req.headers, body };
      const path = new URL(req.url!, 'http://x').pathname;
      if (path === '/text')
        return void res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(JSON.stringify(seen));
      if (path === '/html') {
        const escaped = JSON.stringify(seen).replace(
          /[&<>"']/g,
          (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!,
        );
        return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<pre>${escaped}</pre>`);
      }
      if (path === '/b64') {
        const auth = String(req.headers['x-token'] ?? '');
        const lines = ['', 'u', 'us'].map(
          (prefix) => `Basic ${Buffer.from(`${prefix}user:${auth}`).toString('base64')}`,
        );
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end(lines.join('\n'));
      }
      if (path.startsWith('/fail'))
        return void res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`upstream broke for ${JSON.stringify(req.headers)} at ${req.url}`);
      res
        .writeHead(200, { 'content-type': 'application/json', 'x-echo': String(req.headers['x-token'] ?? '') })
        .end(JSON.stringify(seen));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

/** A port nothing listens on: bound, read, closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const filters = {
  up: '{{secrets.a | upper}}',
  low: '{{secrets.a | lower}}',
  json: '{{secrets.a | json}}',
  json2: '{{secrets.b | json(2)}}',
  trim: '{{secrets.b | trim}}',
  str: '{{secrets.c | string}}',
  def: '{{secrets.c | default("fallback")}}',
  concat: 'pre-{{secrets.a}}-{{secrets.b | upper}}-{{secrets.c | lower}}-post',
  length: '{{secrets.a | length}}',
  first: '{{secrets.a | first}}',
  last: '{{secrets.b | last}}',
  all: '{{secrets}}',
  allText: 'all={{secrets}}',
  allJson: '{{secrets | json}}',
};

const workflows = (echo: string, refusedPort: number) => [
  {
    name: 'every-filter',
    steps: [
      { id: 'mapping', type: 'transform', config: { mapping: filters } },
      {
        id: 'template',
        type: 'transform',
        config: {
          template: 'A={{secrets.a | upper}} B={{secrets.b | json}} C={{secrets.c | lower}}',
          output_key: 'out',
        },
      },
      {
        id: 'log',
        type: 'log',
        config: {
          message: 'log {{secrets.a}} {{secrets.a | upper}} {{secrets.b | json}} {{secrets.c | lower}}',
          level: 'warn',
        },
      },
      {
        id: 'echo',
        type: 'http_request',
        config: {
          method: 'POST',
          url: `${echo}/echo/{{secrets.c}}?k={{secrets.a}}&u={{secrets.a | lower}}&w={{secrets.c | upper}}`,
          headers: {
            Authorization: 'Bearer {{secrets.c}}',
            'X-Token': '{{secrets.b}}',
            'X-Up': '{{secrets.c | upper}}',
          },
          body: { a: '{{secrets.a}}', json: '{{secrets.a | json}}', up: '{{secrets.b | upper}}', all: '{{secrets}}' },
        },
      },
      {
        id: 'text',
        type: 'http_request',
        config: {
          method: 'POST',
          url: `${echo}/text?k={{secrets.a}}`,
          headers: { 'X-Token': '{{secrets.b | lower}}' },
          body: 'raw {{secrets.a}} {{secrets.b}}',
        },
      },
      {
        id: 'html',
        type: 'http_request',
        config: {
          method: 'POST',
          url: `${echo}/html`,
          headers: { 'X-Token': '{{secrets.b}}' },
          body: { a: '{{secrets.a}}' },
        },
      },
      { id: 'b64', type: 'http_request', config: { url: `${echo}/b64`, headers: { 'X-Token': '{{secrets.c}}' } } },
    ],
  },
  {
    name: 'server-error',
    steps: [
      {
        id: 'fail',
        type: 'http_request',
        retry: { max_attempts: 2, backoff_seconds: 0.05 },
        config: {
          url: `${echo}/fail/{{secrets.a}}?k={{secrets.c}}`,
          headers: { 'X-Token': '{{secrets.b}}', Authorization: 'Bearer {{secrets.c | upper}}' },
        },
      },
    ],
  },
  {
    name: 'refused-connection',
    steps: [
      {
        id: 'down',
        type: 'http_request',
        retry: { max_attempts: 1 },
        config: { url: `http://127.0.0.1:${refusedPort}/{{secrets.a}}?k={{secrets.c | lower}}` },
      },
    ],
  },
  {
    name: 'refused-address',
    steps: [
      {
        id: 'private',
        type: 'http_request',
        retry: { max_attempts: 1 },
        config: { url: 'http://10.0.0.1/{{secrets.a | upper}}?k={{secrets.a | lower}}' },
      },
    ],
  },
  {
    name: 'latin1-header',
    steps: [
      {
        id: 'header',
        type: 'http_request',
        retry: { max_attempts: 1 },
        config: { url: `${echo}/echo`, headers: { 'X-Token': '{{secrets.a}}' } },
      },
    ],
  },
  {
    name: 'bad-number',
    steps: [{ id: 'number', type: 'transform', config: { mapping: { n: '{{secrets.a | number}}' } } }],
  },
];

/** Reads a streaming response until it ends, breaks, `stop()` is called or `ms` pass; `stop()` gives what arrived. */
function openStream(url: string, ms: number): { stop(): Promise<string> } {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  let text = '';
  const done = (async () => {
    try {
      const response = await fetch(url, { signal: controller.signal });
      const decoder = new TextDecoder();
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>)
        text += decoder.decode(chunk, { stream: true });
    } catch {
      // stopped, or the server went away: what arrived is what is searched
    } finally {
      clearTimeout(timer);
    }
  })();
  return {
    stop: async () => {
      controller.abort();
      await done;
      return text;
    },
  };
}

const readFor = (url: string, ms: number): Promise<string> => {
  const stream = openStream(url, ms);
  return new Promise((resolve) => setTimeout(() => resolve(stream.stop()), ms));
};

describe('secret-grep', () => {
  it('finds every form it lists, in text and in bytes, and nothing in clean text', () => {
    for (const secret of PLANTED) {
      for (const { text, form } of secretVariants(secret)) {
        const hits = findLeaks([{ where: 'x', content: Buffer.from(`<<${text}>>`) }], [secret]);
        expect(hits.length, form).toBeGreaterThan(0);
      }
    }
    const basic = `Authorization: Basic ${Buffer.from(`user:${C}`).toString('base64')}`;
    expect(findLeaks([{ where: 'x', content: basic }], [C]).map((l) => l.form)).toContain('plain:base64@2');
    expect(findLeaks([{ where: 'x', content: 'nothing secret here, Sp ace, TOKEN, ***' }], PLANTED)).toEqual([]);
  });
});

describe.each(backends)('no secret leaks in any form through runledger serve on $name', (backend) => {
  const servers: Served[] = [];
  const closers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
    for (const c of closers.splice(0)) c.close();
  });

  it('masks secrets and everything derived from them in the database, the logs, the API and SSE', {
    timeout: 120_000,
  }, async () => {
    const echo = await echoServer();
    closers.push(echo.server);
    const database = await backend.create();
    const served = await serve(database, [], {
      RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
      RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-leak-')),
      RUNLEDGER_POLL_MS: '100',
    });
    servers.push(served);
    const responses: Haystack[] = [];
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(served.url + path, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      if (method === 'GET') responses.push({ where: `${method} ${path}`, content: text });
      return { status: response.status, body: text === '' ? null : JSON.parse(text) };
    };
    const stream = openStream(`${served.url}/events/stream?from=beginning`, 60_000);

    for (const [name, value] of [
      ['a', A],
      ['b', B],
      ['c', C],
    ] as const)
      expect((await call('POST', '/secrets', { name, value })).status).toBe(201);
    const started: { wf: string; ex: string; name: string }[] = [];
    for (const definition of workflows(echo.url, await closedPort())) {
      const created = await call('POST', '/workflows', definition);
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const run = await call('POST', `/workflows/${created.body.id}/execute`, { trigger_data: { note: 'hello' } });
      started.push({ wf: created.body.id, ex: run.body.execution_id, name: definition.name });
    }
    const records = [];
    for (const { wf, ex, name } of started) {
      const record = await eventually(async () => {
        const r = await call('GET', `/workflows/${wf}/executions/${ex}`);
        return r.body.status === 'success' || r.body.status === 'failed' ? r.body : undefined;
      }, 60_000);
      expect(record.status, `${name}: ${JSON.stringify(record)}`).toBe(name === 'every-filter' ? 'success' : 'failed');
      records.push(record);
      await call('GET', `/workflows/${wf}/executions`);
      await call('GET', `/workflows/${wf}/executions/${ex}/events`);
      await call('GET', `/runs/${ex}/events`);
      await call('GET', `/runs/${ex}/wait`);
      responses.push({
        where: `SSE /runs/${ex}/events/stream`,
        content: await readFor(`${served.url}/runs/${ex}/events/stream`, 1_000),
      });
    }
    await call('GET', '/runs');
    await call('GET', '/workflows');
    await call('GET', '/secrets');
    await call('GET', '/dlq');

    await eventually(() => served.output().includes('log ***'));
    responses.push({ where: 'SSE /events/stream', content: await stream.stop() });
    expect(responses.at(-1)!.content).toContain('step.completed');
    const leaks = grepSecrets(
      {
        ...(backend.name === 'sqlite' ? { sqlite: database } : { postgres: database, pgDump: PG_DUMP }),
        logs: served.output(),
        responses,
      },
      PLANTED,
    );
    expect(leaks.map((l) => `${l.where} ${l.form} secret ${l.secret}: ${l.context}`)).toEqual([]);
    // the masking did happen, where the secrets were used (not just nowhere to be seen)
    const [filtered] = records;
    const mapping = filtered.steps[0].output;
    expect(mapping).toMatchObject({
      up: '***',
      low: '***',
      json: '***',
      json2: '***',
      trim: '***',
      str: '***',
      def: '***',
      concat: 'pre-***-***-***-post',
      length: A.length,
    });
    expect(JSON.stringify(filtered.steps[3].output)).toContain('***');
    expect(records.find((r) => r.steps[0].step_id === 'fail').error).toMatch(/500/);
    expect(records.find((r) => r.steps[0].step_id === 'private').error).toMatch(/private address/);
    expect(records.find((r) => r.steps[0].step_id === 'header').error).toMatch(/outside Latin-1/);

    // the grep is looking where the data is: the stored forms of what ran are there
    const stored = grepSecrets(
      { ...(backend.name === 'sqlite' ? { sqlite: database } : { postgres: database, pgDump: PG_DUMP }) },
      ['pre-***-***-***-post'],
    );
    expect(stored.length).toBeGreaterThan(0);
  });
});
