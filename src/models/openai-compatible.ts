import { RetryAfterError, TerminalError, ValidationError } from '../errors.js';
import { GenerationError, type Model, type ModelPart, type ModelPrice, type ModelRequest } from '../runtime/model.js';

export interface OpenAiCompatibleModelOptions {
  /** The API base, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`; `/chat/completions` is appended. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer …`; never in an error, a log or the journal. */
  apiKey?: string;
  /**
   * `'prefix'` (default): after a crash the journaled text is sent back as the start of the assistant's message, and
   * the server continues it (vLLM, llama.cpp, Ollama and our mock do). `'restart'`: the server is asked again from the
   * prompt and the runtime drops the text it already has (for servers that do not continue an assistant message).
   */
  continuation?: 'prefix' | 'restart';
  /** Per million tokens, for each call's `usage.cost` and cost budgets: e.g. `{ input: 0.15, output: 0.6 }` (USD). */
  price?: ModelPrice;
}

const EXCERPT_CHARS = 300;

/**
 * The SDK, loaded at the first call: importing it costs about a second of start-up, which every command of the CLI
 * and every server paid before (measured: the CLI e2e tests went past their 30 s), used or not.
 */
const sdk = async () => {
  const [ai, compatible] = await Promise.all([import('ai'), import('@ai-sdk/openai-compatible')]);
  return { ...ai, createOpenAICompatible: compatible.createOpenAICompatible };
};
type Sdk = Awaited<ReturnType<typeof sdk>>;

/**
 * A model behind an OpenAI-compatible chat-completions API, streamed through the Vercel AI SDK (`streamText` with
 * `@ai-sdk/openai-compatible`). The SDK does no retries of its own: the step's retry policy decides. A 4xx other than
 * 408 and 429 is a TerminalError (the request itself is wrong); a 429's `Retry-After` is kept.
 *
 * @example
 * const model = openAiCompatibleModel({ url: 'http://127.0.0.1:11434/v1', model: 'llama3.2' });
 * const { text } = await ctx.generate('answer', { model, messages: [{ role: 'user', content: 'hi' }] });
 */
export function openAiCompatibleModel(options: OpenAiCompatibleModelOptions): Model {
  let parsed: URL;
  try {
    parsed = new URL(options.url);
  } catch {
    throw new ValidationError('url', `"${options.url}" is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new ValidationError('url', 'must be an http or https URL');
  if (typeof options.model !== 'string' || options.model.trim() === '')
    throw new ValidationError('model', 'must name the model');
  const continuation = options.continuation ?? 'prefix';
  if (continuation !== 'prefix' && continuation !== 'restart')
    throw new ValidationError('continuation', "must be 'prefix' or 'restart'");
  for (const side of ['input', 'output'] as const) {
    const per = options.price?.[side];
    if (options.price !== undefined && !(typeof per === 'number' && Number.isFinite(per) && per >= 0))
      throw new ValidationError(
        `price.${side}`,
        `must be a number ≥ 0, per million tokens (got ${JSON.stringify(per)})`,
      );
  }
  const id = `openai-compatible:${options.model}`;
  const stream = (request: ModelRequest) => streamParts(options, id, continuation, request);
  return { id, continuation, ...(options.price ? { price: { ...options.price } } : {}), stream };
}

async function* streamParts(
  options: OpenAiCompatibleModelOptions,
  id: string,
  continuation: 'prefix' | 'restart',
  request: ModelRequest,
): AsyncIterable<ModelPart> {
  const ai = await sdk();
  const provider = ai.createOpenAICompatible({
    name: 'openai-compatible',
    baseURL: options.url.replace(/\/+$/, ''),
    includeUsage: true,
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
  });
  const messages =
    continuation === 'prefix' && request.prefix !== ''
      ? [...request.messages, { role: 'assistant' as const, content: request.prefix }]
      : request.messages;
  const result = ai.streamText({
    model: provider.chatModel(options.model),
    messages,
    abortSignal: request.signal,
    maxRetries: 0,
    // the SDK logs failures to the console by default: the step journals them instead
    onError: () => {},
    ...(request.maxTokens === undefined ? {} : { maxOutputTokens: request.maxTokens }),
  });
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') yield { type: 'text', text: part.text };
      else if (part.type === 'error') throw part.error;
      else if (part.type === 'finish') {
        const usage = part.totalUsage;
        yield {
          type: 'finish',
          finishReason: part.finishReason,
          ...(usage.inputTokens === undefined ? {} : { inputTokens: usage.inputTokens }),
          ...(usage.outputTokens === undefined ? {} : { outputTokens: usage.outputTokens }),
        };
      }
    }
  } catch (error) {
    throw modelError(ai, id, error);
  }
}

/** The SDK's error as the step should see it: which stream failure, or an HTTP failure with its retry decision. */
function modelError(ai: Sdk, id: string, error: unknown): unknown {
  const { APICallError, InvalidResponseDataError, JSONParseError, TypeValidationError } = ai;
  if (JSONParseError.isInstance(error) || TypeValidationError.isInstance(error))
    return new GenerationError(
      'malformed_stream',
      `model ${id} sent stream data that is not a chunk: ${excerpt(error)}`,
    );
  if (InvalidResponseDataError.isInstance(error) && /finish reason/i.test(error.message))
    return new GenerationError('no_finish_reason', `model ${id}: its stream stopped without a finish reason`);
  if (APICallError.isInstance(error) && error.statusCode !== undefined) {
    const status = error.statusCode;
    const message = `model ${id} answered ${status}: ${(error.responseBody ?? error.message).slice(0, EXCERPT_CHARS)}`;
    if (status >= 400 && status < 500 && status !== 408 && status !== 429)
      return Object.assign(new TerminalError(message), { status });
    const retryAfter = Number(error.responseHeaders?.['retry-after']);
    if (Number.isFinite(retryAfter) && retryAfter > 0)
      return Object.assign(new RetryAfterError(message, retryAfter * 1000), { status });
    return Object.assign(new Error(message), { status });
  }
  return error;
}

function excerpt(error: Error): string {
  const text = (error as { text?: unknown }).text;
  const value = (error as { value?: unknown }).value;
  const shown = typeof text === 'string' ? text : value !== undefined ? JSON.stringify(value) : error.message;
  return (shown ?? '').slice(0, EXCERPT_CHARS);
}
