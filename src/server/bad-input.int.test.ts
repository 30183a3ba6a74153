import { mkdtempSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { MAX_BODY_DEPTH } from './body.js';
import { startServer, type Server } from './start.js';

const nestedMapping = (levels: number) => `${'{"a":'.repeat(levels)}"x"${'}'.repeat(levels)}`;
const nestedArray = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/** The answer to a WebSocket upgrade of `path`: its status line's code and body. */
function upgrade(url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, {
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Version': '13',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, body: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A POST over a socket: `chunks` sent as they are, chunked when `length` is not given. */
function post(url: string, path: string, chunks: string[], length?: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const headers = {
      'content-type': 'application/json',
      ...(length === undefined ? {} : { 'content-length': String(length) }),
    };
    const req = httpRequest(`${url}${path}`, { method: 'POST', headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body === '' ? null : JSON.parse(body) }));
    });
    // the server may answer (413) and close before the rest is sent
    req.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EPIPE' || error.code === 'ECONNRESET' ? undefined : reject(error),
    );
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe.each(backends)(
  'bad input on $name: a 400 naming the field and the limit, the same on both backends, nothing stored',
  (backend) => {
    let server: Server;
    let workflowId: string;
    const call = async (method: string, path: string, body?: string) => {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body }),
      });
      const text = await response.text();
      return { status: response.status, body: text === '' ? null : JSON.parse(text) };
    };
    const headCount = async () =>
      (await call('GET', '/runs?limit=100')).body.runs.length +
      (await call('GET', '/workflows')).body.count * 1000 +
      (await call('GET', '/events')).body.count * 1_000_000;

    beforeAll(async () => {
      server = await startServer({
        database: await backend.create(),
        port: 0,
        workers: false,
        dataDir: mkdtempSync(join(tmpdir(), 'rl-bad-')),
        logger: pino({ level: 'silent' }),
      });
      workflowId = (
        await call(
          'POST',
          '/workflows',
          JSON.stringify({ name: 'ok', steps: [{ id: 'a', type: 'log', config: { message: 'hi' } }] }),
        )
      ).body.id;
    });
    afterAll(() => server.close());

    it.each([
      [
        'POST',
        '/workflows',
        '{"name":"a\\u0000b","steps":[]}',
        'name: must not contain the character U+0000 (at index 1)',
      ],
      [
        'POST',
        '/workflows',
        '{"name":"a\\ud800","steps":[]}',
        'name: must be well-formed Unicode (it has an unpaired surrogate at index 1)',
      ],
      [
        'POST',
        '/workflows/{wf}/execute',
        '{"trigger_data":{"x":["\\ud800"]}}',
        'trigger_data.x[0]: must be well-formed Unicode (it has an unpaired surrogate at index 0)',
      ],
      [
        'POST',
        '/workflows/{wf}/execute',
        '{"trigger_data":{"\\u0000":1}}',
        'trigger_data: has a key "\\u0000" that must not contain the character U+0000 (at index 0)',
      ],
      [
        'POST',
        '/events',
        '{"source":"s","detail-type":"t","detail":{"k":"\\u0000"}}',
        'detail.k: must not contain the character U+0000 (at index 0)',
      ],
      [
        'POST',
        '/events',
        `{"source":"s","detail-type":"t","detail":${nestedArray(100_000).replace(/^\[/, '{"a":[').replace(/\]$/, ']}')}}`,
        `nests deeper than the limit of ${MAX_BODY_DEPTH} levels`,
      ],
      ['POST', '/rules', `{"name":"r","pattern":${nestedMapping(100_000)},"target":{"workflow":"x"}}`, `pattern.a.a`],
      [
        'POST',
        '/workflows',
        `{"name":"deep","steps":[{"id":"m","type":"transform","config":{"mapping":${nestedMapping(5_000)}}}]}`,
        `nests deeper than the limit of ${MAX_BODY_DEPTH} levels`,
      ],
      [
        'POST',
        '/workflows',
        '{"name":"f","steps":[{"id":"c","type":"http_request","config":{"url":"file:///etc/passwd"}}]}',
        'steps[0].config.url: the scheme file: is not allowed (only http: and https:)',
      ],
      ['GET', '/workflows/%00', undefined, 'id: must not contain the character U+0000 (at index 0)'],
      [
        'GET',
        '/workflows/{wf}/executions/a%00',
        undefined,
        'execution_id: must not contain the character U+0000 (at index 1)',
      ],
      [
        'GET',
        '/workflows?last_key=garbage',
        undefined,
        'query.last_key: must be the last_key of a previous page (wf_ and 26 characters)',
      ],
      [
        'GET',
        '/workflows/{wf}/executions?last_key=zzz',
        undefined,
        'query.last_key: must be the last_key of a previous page (ex_ and 26 characters)',
      ],
      [
        'GET',
        '/events?last_key=x',
        undefined,
        'query.last_key: must be the last_key of a previous page (a number of 16 digits)',
      ],
      ['GET', '/dlq?queue=%00', undefined, 'query.queue: must not contain the character U+0000 (at index 0)'],
    ])('%s %s %#', async (method, path, body, message) => {
      const before = await headCount();
      const { status, body: answer } = await call(method, path.replace('{wf}', workflowId), body);
      expect(status, JSON.stringify(answer)).toBe(400);
      expect(answer.error.code).toBe('validation');
      expect(answer.error.message).toContain(message);
      expect(await headCount()).toBe(before);
      expect((await call('GET', '/healthz')).status).toBe(200);
    });

    it('reads bodies from the socket with and without a declared length, within the limit', async () => {
      const message = JSON.stringify({ sender_id: 'u', role: 'user', content: 'hi' });
      const declared = await post(server.url, '/channels/b/messages', [message], Buffer.byteLength(message));
      expect(declared.status).toBe(201);
      const chunked = await post(server.url, '/channels/b/messages', [message.slice(0, 10), message.slice(10)]);
      expect(chunked.status, JSON.stringify(chunked.body)).toBe(201);
      expect(chunked.body.seq).toBe(2);
      const big = 'x'.repeat(256 * 1024);
      const over = await post(server.url, '/channels/b/messages', ['{"content":"', big, big, big, big, '"}']);
      expect(over.status).toBe(413);
      expect(over.body.error.message).toMatch(/over .*the limit of 1 MiB/);
      const overDeclared = await post(server.url, '/channels/b/messages', ['{}'], 2 * 1024 * 1024);
      expect(overDeclared.status).toBe(413);
      const malformed = await post(server.url, '/channels/b/messages', ['{"content": '], 12);
      expect(malformed.body.error.code).toBe('malformed_json');
      const empty = await post(server.url, '/channels/b/messages', [], 0);
      expect(empty.status).toBe(400);
      expect(empty.body.error.code).toBe('validation');
      expect((await call('GET', '/channels/b/messages')).body.messages).toHaveLength(2);
    });

    it('answers a malformed percent-escape on the WebSocket path with a 400 naming the field', async () => {
      for (const path of ['/channels/%E0%A4%A/ws', '/channels/%/ws', '/channels/%zz/ws']) {
        const { status, body } = await upgrade(server.url, path);
        expect(status, path).toBe(400);
        expect(JSON.parse(body).error.message).toMatch(/^channel_id: has a malformed percent-escape/);
      }
      expect((await upgrade(server.url, '/channels/%00/ws')).status).toBe(400);
    });
  },
);
