import { describe, expect, it } from 'vitest';
import { modelFromEnv } from './env.js';
import { offlineModel } from './offline.js';
import { openAiCompatibleModel } from './openai-compatible.js';

describe('models', () => {
  it('reads the environment: the offline model unless RUNLEDGER_LLM_URL is set', () => {
    expect(modelFromEnv({})).toMatchObject({ id: 'offline', continuation: 'restart' });
    const model = modelFromEnv({ RUNLEDGER_LLM_URL: 'http://127.0.0.1:1/v1', RUNLEDGER_LLM_MODEL: 'm' });
    expect(model).toMatchObject({ id: 'openai-compatible:m', continuation: 'prefix' });
  });

  it('names the bad setting or option', () => {
    expect(() => modelFromEnv({ RUNLEDGER_LLM_URL: 'http://x/v1' })).toThrow('RUNLEDGER_LLM_MODEL');
    expect(() => modelFromEnv({ RUNLEDGER_LLM_URL: 'ftp://x', RUNLEDGER_LLM_MODEL: 'm' })).toThrow(
      'RUNLEDGER_LLM_URL: must be an http or https URL',
    );
    expect(() => openAiCompatibleModel({ url: 'nope', model: 'm' })).toThrow('url:');
    expect(() => openAiCompatibleModel({ url: 'http://x', model: ' ' })).toThrow('model:');
    expect(() => openAiCompatibleModel({ url: 'http://x', model: 'm', continuation: 'x' as never })).toThrow(
      'continuation:',
    );
    expect(() => offlineModel({ delayMs: -1 })).toThrow('delayMs:');
  });

  it('keeps the API key out of the model it makes', () => {
    const model = openAiCompatibleModel({ url: 'http://127.0.0.1:1/v1', model: 'm', apiKey: 'sk-hidden' });
    expect(JSON.stringify(model)).not.toContain('sk-hidden');
  });
});
