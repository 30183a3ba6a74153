import { z } from 'zod';
import type { Problem } from '../../errors.js';
import { secretReferences } from '../template/parse.js';

/**
 * A stored `generate` step's model: `'offline'` (the deterministic offline model), an OpenAI-compatible server
 * (`{ url, model, api_key_secret?, continuation? }`: the key is a stored secret's name, never the key), or a
 * fallback chain of those (`[primary, backup]`, see docs/models.md).
 */
export type StoredModel =
  | 'offline'
  | { url: string; model: string; api_key_secret?: string; continuation?: 'prefix' | 'restart' };

export const MAX_GENERATE_TOKENS = 1_000_000;
const MAX_CHAIN = 10;
const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const REMOTE_FIELDS = new Set(['url', 'model', 'api_key_secret', 'continuation']);
// what a person who pastes a key would call it: refused with the way to do it instead
const INLINE_KEYS = new Set(['api_key', 'apikey', 'key', 'token', 'authorization', 'headers', 'bearer', 'password']);

/** Why a `config.model` is not one, each problem with its path below `config.model` (`[0].url`). */
function modelProblems(value: unknown, at = ''): Problem[] {
  if (value === 'offline') return [];
  if (Array.isArray(value) && at === '') {
    if (value.length === 0 || value.length > MAX_CHAIN)
      return [{ path: at, message: `a fallback chain is 1 to ${MAX_CHAIN} models` }];
    return value.flatMap((item, i) => modelProblems(item, `[${i}]`));
  }
  if (typeof value === 'string')
    return [
      {
        path: at,
        message: `unknown model kind '${value}': use 'offline' or an OpenAI-compatible server { "url", "model", "api_key_secret" }`,
      },
    ];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return [{ path: at, message: `must be 'offline', { "url", "model", "api_key_secret" }, or a list of those` }];
  const problems: Problem[] = [];
  const m = value as Record<string, unknown>;
  for (const key of Object.keys(m)) {
    if (INLINE_KEYS.has(key.toLowerCase().replace(/[-_]/g, '')) || INLINE_KEYS.has(key.toLowerCase()))
      problems.push({
        path: `${at}.${key}`,
        message: 'an API key is never written in a definition: store it (POST /secrets) and name it in api_key_secret',
      });
    else if (!REMOTE_FIELDS.has(key)) problems.push({ path: `${at}.${key}`, message: `unknown field '${key}'` });
  }
  if (typeof m.url !== 'string' || m.url.trim() === '')
    problems.push({ path: `${at}.url`, message: 'required: the API base, e.g. "https://api.openai.com/v1"' });
  else if (!m.url.includes('{{') && !/^https?:\/\/[^/\s]+/i.test(m.url))
    problems.push({ path: `${at}.url`, message: `must be an http or https URL (got '${m.url}')` });
  if (typeof m.model !== 'string' || m.model.trim() === '' || m.model.length > 200)
    problems.push({ path: `${at}.model`, message: "required: the model's name, 1 to 200 characters" });
  if (m.api_key_secret !== undefined && (typeof m.api_key_secret !== 'string' || !SECRET_NAME.test(m.api_key_secret)))
    problems.push({
      path: `${at}.api_key_secret`,
      message: "must be a stored secret's name (1 to 64 letters, digits or underscores), not the key itself",
    });
  if (m.continuation !== undefined && m.continuation !== 'prefix' && m.continuation !== 'restart')
    problems.push({ path: `${at}.continuation`, message: "must be 'prefix' or 'restart'" });
  return problems;
}

const modelField = z.custom<StoredModel | StoredModel[]>().superRefine((value, ctx) => {
  for (const problem of modelProblems(value))
    ctx.addIssue({
      code: 'custom',
      message: problem.message,
      path: problem.path
        .split(/\.|\[(\d+)\]/)
        .filter((p) => p !== undefined && p !== '')
        .map((p) => (/^\d+$/.test(p) ? Number(p) : p)),
    });
});

/** A `generate` step's config: `{{ }}` templates render in the messages' contents (and the model's url and name). */
export const generateConfig = z
  .object({
    model: modelField,
    messages: z
      .array(z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string().max(1_000_000) }).strict())
      .min(1, 'must have at least one message')
      .max(200),
    max_tokens: z.int().min(1).max(MAX_GENERATE_TOKENS).optional(),
  })
  .strict();

export type GenerateConfig = z.output<typeof generateConfig>;

/**
 * What a `generate` step's schema cannot say: no `{{secrets.…}}` in its config (the model may repeat a prompt's
 * words, and the streamed text is journaled as it arrives, before any masking could see a whole secret), its
 * `api_key_secret`s name stored secrets (given `secrets`), and no compensation (a model call changes nothing).
 */
export function generateProblems(
  step: { config: GenerateConfig; compensate?: unknown },
  path: string,
  secrets: ReadonlySet<string> | undefined,
): Problem[] {
  const problems: Problem[] = secretReferences(step.config, `${path}.config`).map((ref) => ({
    path: ref.path,
    message: `{{secrets.${ref.name}}} is not allowed in a generate step: the model could repeat it into the journaled text (the API key goes in model.api_key_secret)`,
  }));
  const chain = Array.isArray(step.config.model) ? step.config.model : [step.config.model];
  chain.forEach((model, i) => {
    const at = `${path}.config.model${Array.isArray(step.config.model) ? `[${i}]` : ''}.api_key_secret`;
    if (
      typeof model === 'object' &&
      model.api_key_secret !== undefined &&
      secrets &&
      !secrets.has(model.api_key_secret)
    )
      problems.push({
        path: at,
        message: `names no stored secret '${model.api_key_secret}' (store it first: POST /secrets)`,
      });
  });
  if (step.compensate !== undefined)
    problems.push({
      path: `${path}.compensate`,
      message: 'a generate step has no compensation: a model call changes nothing',
    });
  return problems;
}

/** A Generation (or any value) with its keys in the stored workflows' snake_case: `finishReason` → `finish_reason`. */
export function storedSpelling(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(storedSpelling);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      storedSpelling(inner),
    ]),
  );
}
