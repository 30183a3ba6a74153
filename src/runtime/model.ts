import type { Duration } from '../duration.js';
import { RunledgerError } from '../errors.js';
import type { RateLimitUse } from './flow.js';
import type { RetryPolicy } from './workflow.js';

/** One message of a model's prompt, in the roles chat-completion APIs use. */
export interface ModelMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** What a model streams: pieces of text, then one `finish` (a stream without one is a failure). */
export type ModelPart =
  | { type: 'text'; text: string }
  | { type: 'finish'; finishReason: string; inputTokens?: number; outputTokens?: number };

/** One request to a model. */
export interface ModelRequest {
  messages: ModelMessage[];
  maxTokens?: number;
  /** The answer as far as the journal holds it ('' on a first attempt): a model that continues streams what follows it. */
  prefix: string;
  /** Fires on the step's timeout, on cancellation, or when this worker lost the run: stop and throw. */
  signal: AbortSignal;
}

/**
 * A language model `ctx.generate` can call (src/models/ makes them: the offline model, an OpenAI-compatible
 * server through the AI SDK). `continuation` says what it does with a request's `prefix`: `'prefix'` continues
 * after it and streams only what follows; `'restart'` ignores it and streams the whole answer again, and the
 * runtime drops the first `prefix.length` characters, so a client never sees text twice.
 */
export interface Model {
  /** Recorded with each call's usage: `offline`, `openai-compatible:gpt-4o-mini`. */
  readonly id: string;
  readonly continuation: 'prefix' | 'restart';
  /** What its tokens cost, for each call's `usage.cost` and the run's cost budget; none: the cost is unknown (null). */
  readonly price?: ModelPrice;
  stream(request: ModelRequest): AsyncIterable<ModelPart>;
}

/** A model's price, in a currency of your choice (USD, say) per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
}

export interface GenerateOptions {
  /**
   * The model, or a fallback chain `[primary, backup, …]`: an attempt that fails (and may be retried) moves the call
   * to the next model at once, which takes the answer up from the journaled text; the last one keeps the retries.
   */
  model: Model | Model[];
  messages: ModelMessage[];
  /** The answer's limit in tokens (1–1,000,000): an answer the model cuts there fails the call (`max_tokens`). */
  maxTokens?: number;
  /** Attempts of the call, the first included (default 3); each one continues from the journaled text. */
  retry?: RetryPolicy;
  /** Per attempt. */
  timeout?: Duration;
  /** What a person watching the run reads while it generates. */
  label?: string;
  /**
   * Named rate limits the call takes before each attempt (as a step's), then charged by the tokens it really used
   * (input and output): a use's `charge` defaults to them, so a tokens-per-minute limit counts real tokens.
   */
  rateLimit?: RateLimitUse | RateLimitUse[];
}

/** What a model call used, recorded on its step. */
export interface GenerationUsage {
  model: string;
  /** sha256 of the model id, maxTokens and messages: the same prompt hashes the same. */
  promptHash: string;
  /** As the model's last attempt reported them; null when it reported none. */
  inputTokens: number | null;
  outputTokens: number | null;
  /** The tokens at the model's `price`; null when it has none or reported no tokens. */
  cost: number | null;
  /** From the call's first attempt to its answer, crashes in between included. */
  latencyMs: number;
  attempts: number;
  /** Where the last attempt took the answer up (characters of journaled text), null when it began it. */
  resumedAt: number | null;
}

/** What `ctx.generate` returns, and what its step's output records (a replay returns it as recorded). */
export interface Generation {
  text: string;
  finishReason: string;
  usage: GenerationUsage;
}

/**
 * Why a model's stream failed: it had data that is not a chunk, or it ended without a finish reason. (An answer
 * past `maxTokens` is a TerminalError whose message begins `max_tokens:`: trying again would cut it again.)
 */
export type GenerationFailure = 'malformed_stream' | 'no_finish_reason';

/**
 * A model's stream that failed for one of the reasons of GenerationFailure (`reason`), which begins its message.
 * Retried like any step failure: the next attempt continues from the journaled text.
 */
export class GenerationError extends RunledgerError {
  override readonly code = 'generation';
  override name = 'GenerationError';
  constructor(
    readonly reason: GenerationFailure,
    message: string,
  ) {
    super(`${reason}: ${message}`);
  }
}
