import { describe, expect, it } from 'vitest';
import type { ModelMessage, ModelPart } from '../runtime/model.js';
import { offlineModel } from './offline.js';

async function answer(messages: ModelMessage[], signal = new AbortController().signal, maxTokens?: number) {
  const parts: ModelPart[] = [];
  const request = { messages, prefix: '', signal, ...(maxTokens === undefined ? {} : { maxTokens }) };
  for await (const part of offlineModel().stream(request)) parts.push(part);
  return parts;
}

const text = (parts: ModelPart[]) => parts.map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('the offline model', () => {
  it('echoes the last user message, counts the context, and streams it word by word', async () => {
    const parts = await answer([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'how  are you?' },
    ]);
    expect(text(parts)).toBe('You said: "how  are you?" (offline model; 3 messages of context)');
    expect(parts.filter((p) => p.type === 'text')).toHaveLength(11);
    expect(parts.at(-1)).toEqual({ type: 'finish', finishReason: 'stop', inputTokens: 5, outputTokens: 11 });
  });

  it('quotes at most 200 characters, stops at maxTokens, and stops when aborted', async () => {
    const long = await answer([{ role: 'user', content: 'y'.repeat(5000) }]);
    expect(text(long)).toBe(`You said: "${'y'.repeat(200)}…" (offline model; 1 messages of context)`);
    const cut = await answer([{ role: 'user', content: 'a b c' }], new AbortController().signal, 2);
    expect(text(cut)).toBe('You said:');
    expect(cut.at(-1)).toMatchObject({ finishReason: 'length', outputTokens: 2 });
    await expect(answer([{ role: 'user', content: 'x' }], AbortSignal.abort(new Error('timed out')))).rejects.toThrow(
      'timed out',
    );
  });
});
