import { ValidationError } from '../errors.js';
import type { Model, ModelPart, ModelRequest } from '../runtime/model.js';

export interface OfflineModelOptions {
  /** Wait this long before each word (default 0): a slow answer to watch stream, or to crash in the middle of. */
  delayMs?: number;
}

/**
 * The offline model: deterministic, no network, the default and the test model (of `ctx.generate` and of the chat's
 * AI replies). It echoes the last user message (its first 200 characters) and says how much context it got —
 * `You said: "hi" (offline model; 1 messages of context)` — one word at a time. A word counts as a
 * token; past `maxTokens` words it stops with finish reason `length`. It does not continue a prefix: after a crash
 * it answers again from the start and the runtime drops what was already journaled (`continuation: 'restart'`).
 *
 * @example const { text } = await ctx.generate('echo', { model: offlineModel(), messages: [{ role: 'user', content: 'hi' }] });
 */
export function offlineModel(options: OfflineModelOptions = {}): Model {
  const delayMs = options.delayMs ?? 0;
  if (!(Number.isFinite(delayMs) && delayMs >= 0 && delayMs <= 60_000))
    throw new ValidationError('delayMs', `must be a number of ms from 0 to 60000 (got ${options.delayMs})`);
  return {
    id: 'offline',
    continuation: 'restart',
    async *stream(request): AsyncIterable<ModelPart> {
      request.signal.throwIfAborted();
      const words = offlineReply(request.messages).match(/\s*\S+/g) ?? [];
      const limit = request.maxTokens ?? Number.POSITIVE_INFINITY;
      let sent = 0;
      for (const word of words) {
        if (sent === limit) break;
        if (delayMs > 0) await wait(delayMs, request.signal);
        request.signal.throwIfAborted();
        yield { type: 'text', text: word };
        sent += 1;
      }
      const inputTokens = request.messages.reduce((n, m) => n + (m.content.match(/\S+/g)?.length ?? 0), 0);
      yield { type: 'finish', finishReason: sent < words.length ? 'length' : 'stop', inputTokens, outputTokens: sent };
    },
  };
}

const QUOTE_CHARS = 200;

function offlineReply(messages: ModelRequest['messages']): string {
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const quoted = [...last].length > QUOTE_CHARS ? `${[...last].slice(0, QUOTE_CHARS).join('')}…` : last;
  return `You said: "${quoted}" (offline model; ${messages.length} messages of context)`;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal.removeEventListener('abort', stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}
