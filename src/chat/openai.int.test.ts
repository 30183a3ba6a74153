import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RetryAfterError, TerminalError } from '../errors.js';
import { openAiCompatibleProvider } from './openai.js';
import { providerFromEnv } from './providers.js';

interface Received {
  method: string;
  url: string;
  authorization: string | undefined;
  body: unknown;
}

/** A chat-completions server on 127.0.0.1 that records each request and answers with `respond`. */
async function fakeModel(
  respond: (res: ServerResponse) => void | Promise<void>,
): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer(async (req: IncomingMessage, res) => {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    received.push({
      method: req.method ?? '',
      url: req.url ?? '',
      authorization: req.headers.authorization,
      body: JSON.parse(text),
    });
    await respond(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`, received, server };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
const question = [{ role: 'user' as const, content: 'hi' }];
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

async function run(url: string, apiKey?: string): Promise<{ text: string; deltas: string[] }> {
  const deltas: string[] = [];
  const provider = openAiCompatibleProvider({ url, model: 'tiny-1', ...(apiKey ? { apiKey } : {}) });
  const text = await provider.generate(question, {
    signal: new AbortController().signal,
    onDelta: (d) => deltas.push(d),
  });
  return { text, deltas };
}

async function failure(url: string): Promise<unknown> {
  return run(url).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('the OpenAI-compatible provider', () => {
  it('posts the conversation and streams the reply from server-sent events', async () => {
    const { url, received } = await fakeModel(async (res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant' } }] })}\n\n`);
      const wire = `${chunk('Hel') + chunk('lo, ')}: keep-alive\n\n${chunk('wörld')}data: ${JSON.stringify({ choices: [{ delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`;
      // cut the wire mid-line and mid-character, as TCP may
      const bytes = Buffer.from(wire);
      for (let i = 0; i < bytes.length; i += 7) {
        res.write(bytes.subarray(i, i + 7));
        await tick();
      }
      res.end();
    });
    const { text, deltas } = await run(url, 'sk-test-123');
    expect(text).toBe('Hello, wörld');
    expect(deltas).toEqual(['Hel', 'lo, ', 'wörld']);
    expect(received).toEqual([
      {
        method: 'POST',
        url: '/v1/chat/completions',
        authorization: 'Bearer sk-test-123',
        body: { model: 'tiny-1', messages: question, stream: true },
      },
    ]);
  });

  it('sends no Authorization header without an API key, and reads a server that does not stream', async () => {
    const { url, received } = await fakeModel((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          choices: [{ index: 0, message: { role: 'assistant', content: 'whole answer' }, finish_reason: 'stop' }],
        }),
      );
    });
    expect(await run(url)).toEqual({ text: 'whole answer', deltas: ['whole answer'] });
    expect(received[0]?.authorization).toBeUndefined();
  });

  it('fails retryably on a 500, with the status and the start of the body', async () => {
    const { url } = await fakeModel((res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ error: { message: 'the model is overloaded' } }) + ' '.repeat(2000)}TAIL`);
    });
    const error = await failure(url);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(TerminalError);
    expect((error as Error).message).toMatch(
      /^the model answered 500 Internal Server Error: \{"error":\{"message":"the model is overloaded"\}\}/,
    );
    expect((error as Error).message).not.toContain('TAIL');
  });

  it('fails for good on a 4xx, but not on 408 or 429', async () => {
    let status = 401;
    const { url } = await fakeModel((res) => {
      res.writeHead(status, status === 429 ? { 'retry-after': '2' } : {});
      res.end('nope');
    });
    expect(await failure(url)).toBeInstanceOf(TerminalError);
    status = 408;
    const timeout = await failure(url);
    expect(timeout).toBeInstanceOf(Error);
    expect(timeout).not.toBeInstanceOf(TerminalError);
    status = 429;
    const limited = await failure(url);
    expect(limited).toBeInstanceOf(RetryAfterError);
    expect((limited as RetryAfterError).retryAfterMs).toBe(2000);
  });

  it('refuses a stream cut before [DONE] and an error reported inside the stream', async () => {
    let body = chunk('half an ans');
    const { url } = await fakeModel((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    });
    expect(String(await failure(url))).toMatch(/ended the stream before \[DONE\]/);
    body = `${chunk('x')}data: ${JSON.stringify({ error: { message: 'context too long' } })}\n\n`;
    expect(String(await failure(url))).toBe('Error: the model reported an error: context too long');
  });

  it('is what providerFromEnv builds from RUNLEDGER_LLM_*', async () => {
    const { url, received } = await fakeModel((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${chunk('ok')}data: [DONE]\n\n`);
    });
    const provider = providerFromEnv({
      RUNLEDGER_LLM_URL: url,
      RUNLEDGER_LLM_MODEL: 'env-model',
      RUNLEDGER_LLM_API_KEY: 'sk-env',
    });
    expect(await provider.generate(question, { signal: new AbortController().signal, onDelta: () => {} })).toBe('ok');
    expect(received[0]).toMatchObject({ authorization: 'Bearer sk-env', body: { model: 'env-model' } });
  });
});
