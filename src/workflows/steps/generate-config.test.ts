import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../errors.js';
import { parseDefinition } from '../schema.js';
import { storedSpelling } from './generate-config.js';

const hi = [{ role: 'user', content: 'Summarise {{trigger.text}}' }];

function problems(config: Record<string, unknown>, extra: Record<string, unknown> = {}, secrets = ['llm_key']) {
  try {
    parseDefinition(
      { name: 'g', steps: [{ id: 'answer', type: 'generate', config, ...extra }] },
      { secrets: new Set(secrets) },
    );
  } catch (error) {
    if (error instanceof ValidationError) return error.problems;
    throw error;
  }
  return [];
}

describe('a generate step checked at save time', () => {
  it('accepts the offline model, a server with a stored key, and a fallback chain', () => {
    expect(problems({ model: 'offline', messages: hi, max_tokens: 200 })).toEqual([]);
    const server = { url: 'https://api.example.com/v1', model: 'gpt-4o-mini', api_key_secret: 'llm_key' };
    expect(problems({ model: server, messages: hi })).toEqual([]);
    expect(problems({ model: [server, 'offline'], messages: hi }, { retry: { max_attempts: 2 } })).toEqual([]);
  });

  it('refuses an unknown model kind, naming the field', () => {
    expect(problems({ model: 'gpt4', messages: hi })).toEqual([
      {
        path: 'steps[0].config.model',
        message: `unknown model kind 'gpt4': use 'offline' or an OpenAI-compatible server { "url", "model", "api_key_secret" }`,
      },
    ]);
    expect(problems({ model: 42, messages: hi })[0]).toMatchObject({ path: 'steps[0].config.model' });
    expect(problems({ model: [], messages: hi })).toEqual([
      { path: 'steps[0].config.model', message: 'a fallback chain is 1 to 10 models' },
    ]);
  });

  it('refuses empty messages, a bad role and max_tokens out of range', () => {
    expect(problems({ model: 'offline', messages: [] })).toEqual([
      { path: 'steps[0].config.messages', message: 'must have at least one message' },
    ]);
    expect(problems({ model: 'offline', messages: [{ role: 'robot', content: 'x' }] })[0]).toMatchObject({
      path: 'steps[0].config.messages[0].role',
    });
    expect(problems({ model: 'offline', messages: hi, max_tokens: 0 })).toEqual([
      { path: 'steps[0].config.max_tokens', message: 'must be at least 1' },
    ]);
    expect(problems({ model: 'offline', messages: hi, max_tokens: 1_000_001 })).toEqual([
      { path: 'steps[0].config.max_tokens', message: 'must be at most 1000000' },
    ]);
    expect(problems({ model: 'offline', messages: hi, max_tokens: 2.5 })[0]).toMatchObject({
      path: 'steps[0].config.max_tokens',
    });
  });

  it('refuses an inline key wherever it is written, and a key secret that is not stored', () => {
    const inline =
      'an API key is never written in a definition: store it (POST /secrets) and name it in api_key_secret';
    const url = 'https://api.example.com/v1';
    expect(problems({ model: { url, model: 'm', api_key: 'sk-1' }, messages: hi })).toEqual([
      { path: 'steps[0].config.model.api_key', message: inline },
    ]);
    expect(problems({ model: ['offline', { url, model: 'm', apiKey: 'sk-1' }], messages: hi })).toEqual([
      { path: 'steps[0].config.model[1].apiKey', message: inline },
    ]);
    expect(problems({ model: { url, model: 'm', api_key_secret: 'sk-live-abc' }, messages: hi })[0]).toMatchObject({
      path: 'steps[0].config.model.api_key_secret',
      message: expect.stringContaining('not the key itself'),
    });
    expect(problems({ model: { url, model: 'm', api_key_secret: 'other' }, messages: hi })).toEqual([
      {
        path: 'steps[0].config.model.api_key_secret',
        message: "names no stored secret 'other' (store it first: POST /secrets)",
      },
    ]);
  });

  it('refuses a secret in the prompt, a model without url or name, and a compensation', () => {
    const secretInPrompt = problems({ model: 'offline', messages: [{ role: 'user', content: '{{secrets.llm_key}}' }] });
    expect(secretInPrompt).toEqual([
      {
        path: 'steps[0].config.messages[0].content',
        message: expect.stringContaining('not allowed in a generate step'),
      },
    ]);
    expect(problems({ model: { model: 'm' }, messages: hi })[0]).toMatchObject({ path: 'steps[0].config.model.url' });
    expect(problems({ model: { url: 'ftp://x', model: 'm' }, messages: hi })[0]).toMatchObject({
      path: 'steps[0].config.model.url',
    });
    expect(problems({ model: { url: 'https://x.example/v1' }, messages: hi })[0]).toMatchObject({
      path: 'steps[0].config.model.model',
    });
    const compensate = { method: 'DELETE', url: 'https://x.example/y' };
    expect(problems({ model: 'offline', messages: hi }, { compensate })).toEqual([
      { path: 'steps[0].compensate', message: 'a generate step has no compensation: a model call changes nothing' },
    ]);
  });
});

describe('storedSpelling', () => {
  it('spells a Generation in snake_case, and leaves a spelled one as it is', () => {
    const spelled = storedSpelling({ text: 'a', finishReason: 'stop', usage: { inputTokens: 1, resumedAt: null } });
    expect(spelled).toEqual({ text: 'a', finish_reason: 'stop', usage: { input_tokens: 1, resumed_at: null } });
    expect(storedSpelling(spelled)).toEqual(spelled);
  });
});
