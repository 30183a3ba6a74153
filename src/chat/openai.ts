import { RetryAfterError, TerminalError } from '../errors.js';
import type { ChatProvider } from './providers.js';
import { sseData } from './sse.js';

export interface OpenAiCompatibleOptions {
  /** The API base, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`; `/chat/completions` is appended. */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer …`; never part of an error message. */
  apiKey?: string;
}

interface Chunk {
  choices?: Array<{ delta?: { content?: unknown }; message?: { content?: unknown }; finish_reason?: unknown }>;
  error?: { message?: unknown };
}

const EXCERPT_CHARS = 500;

/**
 * A model behind an OpenAI-compatible chat-completions API (OpenAI, vLLM, llama.cpp, Ollama …),
 * streamed over server-sent events. A non-2xx answer is an Error with the status and the start of
 * the body; a 4xx other than 408 and 429 is a TerminalError (the request itself is wrong).
 *
 * @example
 * const provider = openAiCompatibleProvider({ url: 'https://api.openai.com/v1', model: 'gpt-4o-mini', apiKey });
 */
export function openAiCompatibleProvider(options: OpenAiCompatibleOptions): ChatProvider {
  const endpoint = `${options.url.replace(/\/+$/, '')}/chat/completions`;
  return {
    name: `openai-compatible:${options.model}`,
    async generate(messages, { signal, onDelta }) {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'text/event-stream',
          ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
        },
        body: JSON.stringify({ model: options.model, messages, stream: true }),
        signal,
      });
      if (!response.ok) throw await failure(response);
      if (!response.body) throw new Error(`${endpoint} answered ${response.status} without a body`);
      if (!(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
        // a server that ignores `stream: true` answers with one JSON completion
        const text = chunkText(parse(await response.text()), 'message');
        if (text) onDelta(text);
        return text;
      }
      let reply = '';
      let finished = false;
      for await (const data of sseData(response.body)) {
        if (data === '[DONE]') {
          finished = true;
          break;
        }
        const chunk = parse(data);
        const delta = chunkText(chunk, 'delta');
        if (delta) {
          reply += delta;
          onDelta(delta);
        }
        if (chunk.choices?.[0]?.finish_reason) finished = true;
      }
      // a connection cut mid-reply must not store half a reply: retry it
      if (!finished) throw new Error(`${endpoint} ended the stream before [DONE]`);
      return reply;
    },
  };
}

function parse(data: string): Chunk {
  let chunk: Chunk;
  try {
    chunk = JSON.parse(data) as Chunk;
  } catch {
    throw new Error(`the model sent a chunk that is not JSON: ${data.slice(0, EXCERPT_CHARS)}`);
  }
  if (chunk.error)
    throw new Error(
      `the model reported an error: ${String(chunk.error.message ?? JSON.stringify(chunk.error)).slice(0, EXCERPT_CHARS)}`,
    );
  return chunk;
}

function chunkText(chunk: Chunk, field: 'delta' | 'message'): string {
  const content = chunk.choices?.[0]?.[field]?.content;
  return typeof content === 'string' ? content : '';
}

async function failure(response: Response): Promise<Error> {
  const body = (await response.text().catch(() => '')).slice(0, EXCERPT_CHARS);
  const message = `the model answered ${response.status} ${response.statusText}: ${body}`;
  const status = response.status;
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return new TerminalError(message);
  const retryAfter = Number(response.headers.get('retry-after'));
  if (Number.isFinite(retryAfter) && retryAfter > 0) return new RetryAfterError(message, retryAfter * 1000);
  return new Error(message);
}
