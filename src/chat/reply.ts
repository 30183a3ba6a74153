import type { Backoff } from '../backoff.js';
import type { Engine } from '../engine.js';
import { TimeoutError } from '../errors.js';
import { crashPoint } from '../crash.js';
import type { EventHandler, SubscribeOptions, Subscriber } from '../journal/subscription.js';
import type { StoredEvent } from '../storage/store.js';
import type { Channels } from './channels.js';
import {
  CHANNEL_STREAM_PREFIX,
  MESSAGE_LIMITS,
  MESSAGE_POSTED,
  replyEventId,
  toMessage,
  type Message,
  type PostInput,
} from './message.js';
import type { ChatProvider, ContextMessage } from './providers.js';

/** A piece of an AI reply being generated: transient, for live delivery; only the final message is stored. */
export interface ReplyDelta {
  channel_id: string;
  /** the `message_id` of the user message being answered */
  reply_to: string;
  /** the `event_id` the reply will be stored under */
  event_id: string;
  /** A new attempt (after a failure) streams the reply again from its start. */
  attempt: number;
  delta: string;
}

export interface ReplyOptions {
  /** The subscription's name; default `chat.ai-reply`. */
  name?: string;
  /** Attempts per message before it is parked for this subscription; default 5. */
  maxAttempts?: number;
  backoff?: Backoff;
  /** How many messages, up to and including the one answered, the model sees; default 20. */
  contextSize?: number;
  /** An attempt that takes longer is aborted and counts as failed; default 60 s. */
  timeoutMs?: number;
  /** The `sender_id` of replies; default `ai`. */
  senderId?: string;
  /**
   * Where a new subscription starts; default `end`: turning replies on for an existing database
   * does not answer its whole history. Later starts resume from the stored cursor either way.
   */
  from?: 'beginning' | 'end';
  onDelta?: (delta: ReplyDelta) => void;
  onError?: (error: unknown) => void;
}

export const REPLY_SUBSCRIPTION = 'chat.ai-reply';

/** How far past a user message to look for a reply that is already there before asking the model again. */
const ALREADY_REPLIED_WINDOW = 100;

/**
 * Answers every `role: user` message with one `role: ai` message, through a durable subscription
 * over all channels. The reply's `event_id` is derived from the question's (`reply:<event_id>`)
 * and it is written in the transaction that advances the cursor, so a redelivery, a retry or a
 * crash mid-generation never stores a second reply. A message whose provider keeps failing is
 * parked (`engine.parked('chat.ai-reply')`) while the other channels flow on.
 *
 * @example
 * const channels = new Channels(store, engine.journal);
 * await startReplyWorker(engine, channels, providerFromEnv(process.env), { onDelta: (d) => socket.send(JSON.stringify(d)) });
 */
export function startReplyWorker(
  engine: Engine,
  channels: Channels,
  provider: ChatProvider,
  options: ReplyOptions = {},
): Promise<Subscriber> {
  const { prepare, handler } = replyHandler(channels, provider, options);
  return engine.subscribe(
    options.name ?? REPLY_SUBSCRIPTION,
    {
      streamPrefix: CHANNEL_STREAM_PREFIX,
      types: [MESSAGE_POSTED],
      ordered: false,
      from: options.from ?? 'end',
      maxAttempts: options.maxAttempts ?? 5,
      prepare,
      ...(options.backoff ? { backoff: options.backoff } : {}),
      ...(options.onError ? { onError: options.onError } : {}),
    },
    handler,
  );
}

/**
 * The two halves of the reply subscription: `prepare` asks the model before any transaction
 * opens (so no lock is held while it thinks: on SQLite a transaction holds the file's write lock),
 * and `handler` stores the reply in the transaction that advances the cursor. A crash between
 * the two asks the model again on redelivery; the derived `event_id` still stores one reply.
 */
export function replyHandler(
  channels: Channels,
  provider: ChatProvider,
  options: ReplyOptions = {},
): { prepare: NonNullable<SubscribeOptions['prepare']>; handler: EventHandler } {
  const contextSize = options.contextSize ?? 20;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const prepare = async (event: StoredEvent, { attempt }: { attempt: number }): Promise<PostInput | null> => {
    const question = toMessage(event);
    if (question.role !== 'user') return null;
    const eventId = replyEventId(question.event_id);
    const later = await channels.history(question.channel_id, { after: question.seq, limit: ALREADY_REPLIED_WINDOW });
    if (later.messages.some((m) => m.event_id === eventId)) return null;
    const { messages } = await channels.history(question.channel_id, { before: question.seq + 1, limit: contextSize });
    const onDelta = (delta: string) => {
      try {
        options.onDelta?.({
          channel_id: question.channel_id,
          reply_to: question.message_id,
          event_id: eventId,
          attempt,
          delta,
        });
      } catch {
        // live delivery is best effort: a failing listener must not fail the reply
      }
    };
    const text = await generate(provider, messages.map(toContext), onDelta, timeoutMs);
    if (text.trim() === '') throw new Error(`${provider.name} returned an empty reply`);
    const { content, truncated } = fit(text);
    crashPoint('reply:afterGenerate');
    return {
      event_id: eventId,
      sender_id: options.senderId ?? 'ai',
      role: 'ai',
      content,
      content_type: 'markdown',
      metadata: {
        reply_to: question.message_id,
        reply_to_seq: question.seq,
        provider: provider.name,
        ...(truncated ? { truncated: true } : {}),
      },
    };
  };
  const handler: EventHandler = async (event, { tx, prepared }) => {
    if (prepared) await channels.post(toMessage(event).channel_id, prepared as PostInput, { tx });
  };
  return { prepare, handler };
}
async function generate(
  provider: ChatProvider,
  context: ContextMessage[],
  onDelta: (delta: string) => void,
  timeoutMs: number,
): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new TimeoutError(`${provider.name} did not answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    return await provider.generate(context, { signal: controller.signal, onDelta });
  } finally {
    clearTimeout(timer);
  }
}

function toContext(message: Message): ContextMessage {
  return { role: message.role === 'ai' ? 'assistant' : message.role, content: message.content };
}

/** A reply over the content limit is cut at a character boundary rather than parked for ever. */
function fit(text: string): { content: string; truncated: boolean } {
  if (Buffer.byteLength(text) <= MESSAGE_LIMITS.contentBytes) return { content: text, truncated: false };
  let content = '';
  let bytes = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(char);
    if (bytes > MESSAGE_LIMITS.contentBytes) break;
    content += char;
  }
  return { content, truncated: true };
}
