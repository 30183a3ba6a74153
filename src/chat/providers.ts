import { ValidationError } from '../errors.js';
import { openAiCompatibleProvider } from './openai.js';

/** One turn of the context handed to a model, in the roles chat-completion APIs use. */
export interface ContextMessage {
  role: 'user' | 'assistant' | 'system';
  content: string;
}

export interface GenerateOptions {
  /** Aborted when the attempt times out: stop and throw. */
  signal: AbortSignal;
  /** Each piece of the reply as it is produced; the pieces concatenated are the returned text. */
  onDelta: (delta: string) => void;
}

/**
 * A language model that writes a reply to a conversation. Throwing a `TerminalError` says the
 * request itself is wrong (a 4xx); anything else is worth retrying.
 */
export interface ChatProvider {
  readonly name: string;
  generate(messages: ContextMessage[], options: GenerateOptions): Promise<string>;
}

const QUOTE_CHARS = 200;

/**
 * The default model: deterministic, offline, instant. It echoes the last user message (the first
 * 200 characters) and says how much context it got, streamed word by word.
 *
 * @example
 * await offlineProvider().generate([{ role: 'user', content: 'hi' }], { signal, onDelta })
 * // 'You said: "hi" (offline model; 1 messages of context)'
 */
export function offlineProvider(): ChatProvider {
  return {
    name: 'offline',
    async generate(messages, { signal, onDelta }) {
      signal.throwIfAborted();
      const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      const quoted = [...last].length > QUOTE_CHARS ? `${[...last].slice(0, QUOTE_CHARS).join('')}…` : last;
      const reply = `You said: "${quoted}" (offline model; ${messages.length} messages of context)`;
      for (const word of reply.match(/\s*\S+/g) ?? []) {
        signal.throwIfAborted();
        onDelta(word);
      }
      return reply;
    },
  };
}

/**
 * The provider the environment asks for: an OpenAI-compatible server when `RUNLEDGER_LLM_URL` is
 * set (with `RUNLEDGER_LLM_MODEL`, and `RUNLEDGER_LLM_API_KEY` when it needs one), else the
 * offline model. Call it at the edge (CLI, server entry) with `process.env`.
 *
 * @example const provider = providerFromEnv(process.env);
 */
export function providerFromEnv(env: Record<string, string | undefined>): ChatProvider {
  const url = env.RUNLEDGER_LLM_URL?.trim();
  if (!url) return offlineProvider();
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ValidationError('RUNLEDGER_LLM_URL', `"${url}" is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new ValidationError('RUNLEDGER_LLM_URL', 'must be an http or https URL');
  const model = env.RUNLEDGER_LLM_MODEL?.trim();
  if (!model) throw new ValidationError('RUNLEDGER_LLM_MODEL', 'must be set when RUNLEDGER_LLM_URL is');
  const apiKey = env.RUNLEDGER_LLM_API_KEY?.trim();
  return openAiCompatibleProvider({ url, model, ...(apiKey ? { apiKey } : {}) });
}
