import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sseReader } from '../sse-read.js';
import { startMockServices, type MockServices } from './index.js';

describe('the mock model (POST /v1/chat/completions)', () => {
  let mock: MockServices;
  beforeAll(async () => {
    mock = await startMockServices();
  });
  afterEach(() => mock.reset());
  afterAll(() => mock.close());

  const ask = (messages: Array<{ role: string; content: string }>, extra: object = {}) =>
    fetch(`${mock.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, messages, ...extra }),
    });
  const chunks = async (response: Response) => {
    const parse = sseReader();
    const data: string[] = [];
    for await (const c of response.body!.pipeThrough(new TextDecoderStream()))
      data.push(...parse(c).map((m) => m.data));
    return data;
  };
  const text = (data: string[]) =>
    data
      .filter((d) => d !== '[DONE]')
      .map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '')
      .join('');

  it('streams its answer, continues a trailing assistant prefix, and logs each request', async () => {
    const control = await fetch(`${mock.url}/_model`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ words: 5, delay_ms: 0 }),
    });
    expect(control.status).toBe(200);
    const user = { role: 'user', content: 'q' };
    expect(text(await chunks(await ask([user])))).toBe('Answer to "q": w1 w2 w3 w4 w5.');
    const continued = await chunks(await ask([user, { role: 'assistant', content: 'Answer to "q": w1 w2' }]));
    expect(text(continued)).toBe(' w3 w4 w5.');
    expect(continued.at(-1)).toBe('[DONE]');
    // a prefix that is not the answer's start is not continued: the whole answer comes
    expect(text(await chunks(await ask([user, { role: 'assistant', content: 'nope' }])))).toBe(
      'Answer to "q": w1 w2 w3 w4 w5.',
    );
    const log = (await (await fetch(`${mock.url}/_model`)).json()).requests;
    expect(log.map((r: { prefix: number; continued: boolean }) => [r.prefix, r.continued])).toEqual([
      [0, false],
      [20, true],
      [4, false],
    ]);
    expect(log[1].messages).toHaveLength(2);
  });

  it('cuts at max_tokens, and has faults: a malformed chunk, no finish reason, an HTTP status', async () => {
    mock.model.configure({ words: 10, delay_ms: 0 });
    const cut = await chunks(await ask([{ role: 'user', content: 'q' }], { max_tokens: 2 }));
    expect(cut.some((d) => d.includes('"finish_reason":"length"'))).toBe(true);
    mock.model.setFaults([{ kind: 'malformed', after: 1 }]);
    const malformed = await chunks(await ask([{ role: 'user', content: 'q' }]));
    expect(() => JSON.parse(malformed.at(-1)!)).toThrow();
    mock.model.setFaults([{ kind: 'no_finish', after: 2 }]);
    const unfinished = await chunks(await ask([{ role: 'user', content: 'q' }]));
    expect(unfinished).toHaveLength(2);
    expect(unfinished.some((d) => d.includes('finish_reason":"'))).toBe(false);
    mock.model.setFaults([{ kind: 'status', status: 429, retry_after: 2 }]);
    const limited = await ask([{ role: 'user', content: 'q' }]);
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '2']);
    expect(mock.model.requests().map((r) => r.outcome)).toEqual(['length', 'fault', 'fault', 'fault']);
  });

  it('refuses a bad knob, naming it', async () => {
    const bad = await fetch(`${mock.url}/_model`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ faults: [{ kind: 'explode' }] }),
    });
    expect(bad.status).toBe(422);
    expect((await bad.json()).error.field).toBe('faults[0].kind');
  });
});
