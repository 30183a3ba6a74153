import { createServer, request, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../mock-services/index.js';
import { RUN_EVENT } from '../runtime/events.js';
import { runStream } from '../runtime/pass/history.js';
import { useServer } from '../server/test-server.js';
import { sseReader, type SseMessage } from '../sse-read.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';

const KEY = 'sk-stored-9d1e77';
const fast = { max_attempts: 3, backoff_seconds: 0.01, backoff_rate: 1 };

/** A loopback hop in front of the mock model that records each request's Authorization header. */
async function recordingProxy(target: string): Promise<{ url: string; authorizations: string[]; close(): void }> {
  const authorizations: string[] = [];
  const server: HttpServer = createServer((req, res) => {
    authorizations.push(String(req.headers.authorization));
    const upstream = request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    authorizations,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Every message of the run's text stream, until it closes (the run ended). */
async function streamed(url: string, runId: string): Promise<SseMessage[]> {
  const response = await fetch(`${url}/runs/${runId}/stream`);
  expect(response.status).toBe(200);
  const parse = sseReader();
  const got: SseMessage[] = [];
  for await (const chunk of response.body!.pipeThrough(new TextDecoderStream())) got.push(...parse(chunk));
  return got;
}

const textOf = (messages: SseMessage[]) =>
  messages
    .filter((m) => m.event === 'text')
    .map((m) => (JSON.parse(m.data) as { text: string }).text)
    .join('');

describe.each(backends)('a stored generate step over the HTTP API on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 50, allow: ['127.0.0.1'] });
  let mock: MockServices;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  beforeAll(async () => {
    mock = await startMockServices();
    proxy = await recordingProxy(mock.url);
  });
  afterAll(async () => {
    proxy.close();
    await mock.close();
  });
  afterEach(() => mock.reset());

  /** Creates the workflow, executes it with `trigger`, reads its text stream to the end and the execution record. */
  async function execute(definition: unknown, trigger: Record<string, unknown>) {
    const created = await served.call('POST', '/workflows', definition);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const started = await served.call('POST', `/workflows/${created.body.id}/execute`, { trigger_data: trigger });
    expect(started.status).toBe(202);
    const id = started.body.execution_id as string;
    const messages = await streamed(served.server.url, id);
    const record = await eventually(async () => {
      const { body } = await served.call('GET', `/workflows/${created.body.id}/executions/${id}`);
      return ['success', 'failed'].includes(body.status) ? body : undefined;
    });
    return { id, messages, record };
  }

  it('runs the offline model with the trigger interpolated; a later step reads { text, finish_reason, usage }', async () => {
    const { messages, record } = await execute(
      {
        name: 'summarise-offline',
        steps: [
          {
            id: 'answer',
            type: 'generate',
            config: {
              model: 'offline',
              messages: [{ role: 'user', content: 'Summarise {{trigger.text}}' }],
              max_tokens: 200,
            },
          },
          {
            id: 'use',
            type: 'transform',
            config: { mapping: { said: '{{steps.answer.output.text}}', why: '{{steps.answer.output.finish_reason}}' } },
          },
        ],
      },
      { text: 'the journal' },
    );
    const reply = 'You said: "Summarise the journal" (offline model; 1 messages of context)';
    expect(record.status).toBe('success');
    expect(record.steps[0].output).toMatchObject({
      text: reply,
      finish_reason: 'stop',
      usage: { model: 'offline', input_tokens: 3, output_tokens: 11, attempts: 1, resumed_at: null },
    });
    expect(record.steps[0].input).toMatchObject({ model: 'offline', max_tokens: 200, messages: 1 });
    expect(record.steps[1].output).toEqual({ said: reply, why: 'stop' });
    expect(textOf(messages)).toBe(reply);
    expect(messages.map((m) => m.event).slice(-2)).toEqual(['generated', 'end']);
  });

  it('calls the mock model with the key of a stored secret, resumes a broken stream, and journals no key', async () => {
    expect((await served.call('POST', '/secrets', { name: 'llm_key', value: KEY })).status).toBe(201);
    mock.model.configure({ words: 30, delay_ms: 2 });
    mock.model.setFaults([{ kind: 'malformed', after: 8 }]);
    const { id, messages, record } = await execute(
      {
        name: 'summarise-mock',
        steps: [
          {
            id: 'answer',
            type: 'generate',
            retry: fast,
            config: {
              model: { url: `${proxy.url}/v1`, model: 'mock-1', api_key_secret: 'llm_key' },
              messages: [
                { role: 'system', content: 'Be brief.' },
                { role: 'user', content: 'Summarise {{trigger.text | upper}}' },
              ],
            },
          },
        ],
      },
      { text: 'the journal' },
    );
    const question = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Summarise THE JOURNAL' },
    ];
    const full = mock.model.answer(question);
    expect(record.status).toBe('success');
    const output = record.steps[0].output;
    expect(output.text).toBe(full);
    expect(output.finish_reason).toBe('stop');
    expect(output.usage).toMatchObject({ model: 'openai-compatible:mock-1', attempts: 2 });
    expect(output.usage.resumed_at).toBeGreaterThan(0);
    // the second attempt continued the journaled prefix: the client read one answer, nothing twice
    const [first, second] = mock.model.requests();
    expect(first!.messages).toEqual(question);
    expect(second).toMatchObject({ continued: true, prefix: output.usage.resumed_at });
    expect(textOf(messages)).toBe(full);
    expect(messages.some((m) => m.event === 'resumed')).toBe(true);
    expect(proxy.authorizations).toEqual([`Bearer ${KEY}`, `Bearer ${KEY}`]);
    const events = await served.server.engine.journal.readStream(runStream(id), { limit: 100_000 });
    expect(events.filter((e) => e.type === RUN_EVENT.stepResumed)).toHaveLength(1);
    expect(JSON.stringify(events)).not.toContain(KEY);
    expect(JSON.stringify(record)).not.toContain(KEY);
  });

  it('generates once per item of a map, and a rerun from a later step reuses the answer without asking again', async () => {
    const { id, record } = await execute(
      {
        name: 'per-item',
        steps: [
          {
            id: 'each',
            type: 'map',
            config: {
              items: '{{trigger.items}}',
              steps: [
                {
                  id: 'answer',
                  type: 'generate',
                  config: {
                    model: { url: `${mock.url}/v1`, model: 'mock-1' },
                    messages: [{ role: 'user', content: 'About {{item}}' }],
                  },
                },
              ],
            },
          },
          { id: 'use', type: 'transform', config: { mapping: { first: '{{steps.each.output[0].output.text}}' } } },
        ],
      },
      { items: ['ducks', 'geese'] },
    );
    const about = (item: string) => mock.model.answer([{ role: 'user', content: `About ${item}` }]);
    expect(record.status).toBe('success');
    expect(record.steps[0].output.map((r: { output: { text: string } }) => r.output.text)).toEqual([
      about('ducks'),
      about('geese'),
    ]);
    expect(record.steps[1].output).toEqual({ first: about('ducks') });
    expect(mock.model.requests()).toHaveLength(2);
    const wid = record.workflow_id as string;
    const rerun = await served.call('POST', `/workflows/${wid}/executions/${id}/rerun`, { from_step: 'use' });
    expect(rerun.status).toBe(202);
    const again = await eventually(async () => {
      const { body } = await served.call('GET', `/workflows/${wid}/executions/${rerun.body.execution_id}`);
      return ['success', 'failed'].includes(body.status) ? body : undefined;
    });
    expect(again.status).toBe('success');
    expect(again.steps[1].output).toEqual({ first: about('ducks') });
    expect(mock.model.requests()).toHaveLength(2);
  });

  it('fails for good on an answer past max_tokens, and on a model URL the SSRF guard refuses (before any connection)', async () => {
    mock.model.configure({ words: 30, delay_ms: 0 });
    const cut = await execute(
      {
        name: 'too-long',
        steps: [
          {
            id: 'answer',
            type: 'generate',
            config: {
              model: { url: `${mock.url}/v1`, model: 'mock-1' },
              messages: [{ role: 'user', content: 'hi' }],
              max_tokens: 4,
            },
          },
        ],
      },
      {},
    );
    expect(cut.record.status).toBe('failed');
    expect(cut.record.steps[0].error).toContain('max_tokens');
    expect(mock.model.requests()).toHaveLength(1);
    const loopback = await execute(
      {
        name: 'loopback',
        steps: [
          {
            id: 'answer',
            type: 'generate',
            config: {
              // loopback, but not the allowed 127.0.0.1: refused before any connection
              model: { url: 'http://[::1]:9/v1', model: 'x' },
              messages: [{ role: 'user', content: 'hi' }],
            },
          },
        ],
      },
      {},
    );
    expect(loopback.record.status).toBe('failed');
    expect(loopback.record.steps[0].error).toContain(
      'model openai-compatible:x: refused http://[::1]:9/v1: ::1 is a loopback address',
    );
    expect(loopback.record.steps[0].error).toContain('RUNLEDGER_HTTP_ALLOW');
    expect(loopback.record.steps[0].attempts).toBe(1);
  });

  it('refuses a definition with an inline key or an unknown key secret at create time, naming the field', async () => {
    const step = (model: unknown) => ({
      name: 'bad',
      steps: [{ id: 'answer', type: 'generate', config: { model, messages: [{ role: 'user', content: 'hi' }] } }],
    });
    const inline = await served.call('POST', '/workflows', step({ url: `${mock.url}/v1`, model: 'm', api_key: KEY }));
    expect(inline.status).toBe(400);
    expect(JSON.stringify(inline.body)).toContain('steps[0].config.model.api_key');
    const unknown = await served.call(
      'POST',
      '/workflows',
      step({ url: `${mock.url}/v1`, model: 'm', api_key_secret: 'nope' }),
    );
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain("names no stored secret 'nope'");
  });
});
