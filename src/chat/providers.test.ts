import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { offlineProvider, providerFromEnv } from './providers.js';
import { sseData } from './sse.js';

const signal = new AbortController().signal;

describe('the offline provider', () => {
  it('echoes the last user message, counts the context, and streams it word by word', async () => {
    const deltas: string[] = [];
    const reply = await offlineProvider().generate(
      [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'how  are you?' },
      ],
      { signal, onDelta: (d) => deltas.push(d) },
    );
    expect(reply).toBe('You said: "how  are you?" (offline model; 3 messages of context)');
    expect(deltas.length).toBe(11);
    expect(deltas.join('')).toBe(reply);
  });

  it('quotes at most 200 characters and stops when aborted', async () => {
    const reply = await offlineProvider().generate([{ role: 'user', content: 'y'.repeat(5000) }], {
      signal,
      onDelta: () => {},
    });
    expect(reply).toBe(`You said: "${'y'.repeat(200)}…" (offline model; 1 messages of context)`);
    const aborted = AbortSignal.abort(new Error('timed out'));
    await expect(
      offlineProvider().generate([{ role: 'user', content: 'x' }], { signal: aborted, onDelta: () => {} }),
    ).rejects.toThrow('timed out');
  });
});

describe('providerFromEnv', () => {
  it('is offline without a URL, and an OpenAI-compatible provider with one', () => {
    expect(providerFromEnv({}).name).toBe('offline');
    expect(providerFromEnv({ RUNLEDGER_LLM_URL: '  ' }).name).toBe('offline');
    expect(providerFromEnv({ RUNLEDGER_LLM_URL: 'http://127.0.0.1:1/v1', RUNLEDGER_LLM_MODEL: 'm1' }).name).toBe(
      'openai-compatible:m1',
    );
  });

  it.each([
    [{ RUNLEDGER_LLM_URL: 'http://127.0.0.1:1/v1' }, 'RUNLEDGER_LLM_MODEL'],
    [{ RUNLEDGER_LLM_URL: 'not a url', RUNLEDGER_LLM_MODEL: 'm' }, 'RUNLEDGER_LLM_URL'],
    [{ RUNLEDGER_LLM_URL: 'ftp://host/v1', RUNLEDGER_LLM_MODEL: 'm' }, 'RUNLEDGER_LLM_URL'],
  ])('rejects %j naming %s', (env, path) => {
    expect(() => providerFromEnv(env)).toThrow(ValidationError);
    expect(() => providerFromEnv(env)).toThrow(new RegExp(`^${path}:`));
  });
});

describe('sseData', () => {
  async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
    for (const part of parts) yield new TextEncoder().encode(part);
  }
  const collect = async (...parts: string[]) => {
    const out: string[] = [];
    for await (const data of sseData(chunks(...parts))) out.push(data);
    return out;
  };

  it('splits events on blank lines whatever the line ending, across chunk boundaries', async () => {
    expect(await collect('data: a\n\nda', 'ta: b\r', '\n\r\ndata:c\r\rdata: [DONE]\n\n')).toEqual([
      'a',
      'b',
      'c',
      '[DONE]',
    ]);
  });

  it('joins the data lines of one event, ignores comments and other fields, and keeps multi-byte characters whole', async () => {
    const euro = new TextEncoder().encode('data: €\n\n');
    async function* split(): AsyncGenerator<Uint8Array> {
      yield new TextEncoder().encode(': keep-alive\n\nevent: x\nid: 1\ndata: one\ndata:  two\n\n');
      yield euro.slice(0, 7);
      yield euro.slice(7);
    }
    const out: string[] = [];
    for await (const data of sseData(split())) out.push(data);
    expect(out).toEqual(['one\n two', '€']);
  });

  it('hands over a last event the stream did not terminate with a blank line', async () => {
    expect(await collect('data: a\n\ndata: b')).toEqual(['a', 'b']);
  });
});
