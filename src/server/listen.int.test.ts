import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workflow } from '../runtime/workflow.js';
import { createSqlitePath } from '../testing/databases.js';
import { postHead, slowClient } from '../testing/slow-client.js';
import { watch } from '../testing/socket.js';
import { listen } from './listen.js';
import { startServer, type Server } from './start.js';

const gated = workflow('gated', async (ctx) => {
  await ctx.step('before', async () => 1);
  return { go: await ctx.waitForEvent<{ ok: boolean }>('go') };
});

/** The bound under test: Node's own would hold a slow client for 60 s (headers) and 300 s (request). */
const BOUND_MS = 1_000;
/** The bound, plus Node's check every second, plus slack for a busy machine. */
const CUT_WITHIN_MS = BOUND_MS + 1_000 + 1_000;

describe('request timeouts: a slow client is cut off, a long answer is not', () => {
  let server: Server;

  beforeAll(async () => {
    const database = createSqlitePath();
    server = await startServer({
      database,
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-listen-')),
      logger: pino({ level: 'silent' }),
      pollMs: 100,
      codeWorkflows: [gated],
      headersTimeoutMs: BOUND_MS,
      requestTimeoutMs: BOUND_MS,
    });
  });
  afterAll(() => server?.close());

  it.each(['/callbacks/cb_nope', '/workflows'])(
    'answers 408 and closes a body trickled one byte a second to %s',
    async (path) => {
      const body = '{"name":"slow","steps":[]}';
      const { answer, closedAfterMs } = await slowClient(server.url, postHead(server.url, path, body.length), body);
      expect(closedAfterMs, 'the connection was still open after 8 s').not.toBeNull();
      expect(closedAfterMs!).toBeLessThan(CUT_WITHIN_MS);
      expect(closedAfterMs!).toBeGreaterThanOrEqual(BOUND_MS - 50);
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    },
  );

  it('answers 408 and closes headers trickled one byte a second', async () => {
    const { answer, closedAfterMs } = await slowClient(
      server.url,
      'GET /healthz HTTP/1.1\r\n',
      `Host: ${new URL(server.url).host}\r\n\r\n`,
    );
    expect(closedAfterMs, 'the connection was still open after 8 s').not.toBeNull();
    expect(closedAfterMs!).toBeLessThan(CUT_WITHIN_MS);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('keeps an SSE stream, a 5 s long-poll and a WebSocket open past the bound', async () => {
    const { id } = await server.engine.start(gated, {});
    const sse = await fetch(`${server.url}/runs/${id}/events/stream`);
    expect(sse.status).toBe(200);
    const reader = sse.body!.getReader();
    let streamed = '';
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        streamed += Buffer.from(value).toString();
      }
    })();
    const channel = watch(server.url, 'slow-bound');
    await channel.open;
    const started = Date.now();
    const wait = await fetch(`${server.url}/runs/${id}/wait?timeout=5s`);
    const waitedMs = Date.now() - started;
    // the API's own answer at its own timeout, not Node's: the run is still waiting for its event
    expect(wait.status).toBe(408);
    expect(await wait.json()).toEqual({ status: expect.any(String), run_id: id });
    expect(waitedMs).toBeGreaterThanOrEqual(4_900);

    // 5 s after they opened, the stream and the socket still carry what happens now
    await fetch(`${server.url}/channels/slow-bound/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sender_id: 'u1', role: 'user', content: 'still there?' }),
    });
    await server.engine.signal(id, 'go', { ok: true });
    await reading;
    expect(streamed).toMatch(/event: wait\.started/);
    expect(streamed).toMatch(/event: run\.completed/);
    await expect.poll(() => channel.messages.map((m) => m.content)).toContain('still there?');
    expect(channel.ws.readyState).toBe(channel.ws.OPEN);
    channel.ws.terminate();
  }, 20_000);

  it('serves the next request of a kept-alive connection that sat idle longer than the bound', async () => {
    const head = `GET /healthz HTTP/1.1\r\nHost: ${new URL(server.url).host}\r\n\r\n`;
    const { hostname, port } = new URL(server.url);
    const socket = connect({ host: hostname, port: Number(port) });
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.write(head);
    await expect.poll(() => answer).toMatch(/^HTTP\/1\.1 200 /);
    await new Promise((r) => setTimeout(r, CUT_WITHIN_MS));
    socket.write(head);
    await expect.poll(() => answer.match(/HTTP\/1\.1 200 /g)?.length).toBe(2);
    socket.destroy();
    await closed;
  }, 10_000);

  it('refuses a headers bound longer than the request bound, naming the field', async () => {
    await expect(
      listen(
        { fetch: () => new Response() },
        { host: '127.0.0.1', port: 0, headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 },
      ),
    ).rejects.toThrow(/headersTimeoutMs/);
    await expect(
      listen({ fetch: () => new Response() }, { host: '127.0.0.1', port: 0, requestTimeoutMs: 0 }),
    ).rejects.toThrow(/requestTimeoutMs/);
  });
});
