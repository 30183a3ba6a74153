import { ValidationError } from '../errors.js';
import type { Model } from '../runtime/model.js';
import { offlineModel } from './offline.js';
import { openAiCompatibleModel } from './openai-compatible.js';

/**
 * The model the environment asks for, as the chat's AI replies read it: an OpenAI-compatible server when
 * `RUNLEDGER_LLM_URL` is set (with `RUNLEDGER_LLM_MODEL`, and `RUNLEDGER_LLM_API_KEY` when it needs one), else the
 * offline model. Call it at the edge (a workflow module, the CLI) with `process.env`.
 *
 * @example const model = modelFromEnv(process.env);
 */
export function modelFromEnv(env: Record<string, string | undefined>): Model {
  const url = env.RUNLEDGER_LLM_URL?.trim();
  if (!url) return offlineModel();
  const model = env.RUNLEDGER_LLM_MODEL?.trim();
  if (!model) throw new ValidationError('RUNLEDGER_LLM_MODEL', 'must be set when RUNLEDGER_LLM_URL is');
  const apiKey = env.RUNLEDGER_LLM_API_KEY?.trim();
  try {
    return openAiCompatibleModel({ url, model, ...(apiKey ? { apiKey } : {}) });
  } catch (error) {
    if (error instanceof ValidationError)
      throw new ValidationError(`RUNLEDGER_LLM_${error.path.toUpperCase()}`, error.problems[0]!.message);
    throw error;
  }
}
