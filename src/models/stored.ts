import type { Model } from '../runtime/model.js';
import type { ModelReference } from '../workflows/steps/generate.js';
import { offlineModel } from './offline.js';
import { openAiCompatibleModel } from './openai-compatible.js';

/**
 * The model a stored workflow's `generate` step names (its key already read from the secrets): the offline model, or
 * an OpenAI-compatible server through the AI SDK. app/ hands it to the stored workflows' interpreter.
 *
 * @example storedWorkflows(engine, { secretKey, models: storedModel })
 */
export function storedModel(reference: ModelReference): Model {
  if (reference.kind === 'offline') return offlineModel();
  const { url, model, apiKey, continuation } = reference;
  return openAiCompatibleModel({
    url,
    model,
    ...(apiKey === undefined ? {} : { apiKey }),
    ...(continuation ? { continuation } : {}),
  });
}
