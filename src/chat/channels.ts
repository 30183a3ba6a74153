import { NotFoundError, ValidationError } from '../errors.js';
import { newId } from '../ids.js';
import type { Journal } from '../journal/journal.js';
import type { Store, StreamInfo } from '../storage/store.js';
import {
  channelOf,
  channelStream,
  checkChannelId,
  checkPost,
  MESSAGE_POSTED,
  postKey,
  toMessage,
  type Message,
  type MessageData,
  type PostInput,
} from './message.js';

export interface ChannelSummary {
  channel_id: string;
  last_seq: number;
  /** Equal to `last_seq` while a channel's stream holds only messages (it does: only `post` writes it). */
  message_count: number;
  /** ms since the epoch, database clock, of the last message */
  last_ts: number;
  updated_at: string;
}

export interface PostResult {
  message: Message;
  /** false: the `event_id` was posted to this channel before; `message` is that first message and nothing was written. */
  created: boolean;
}

/**
 * A page of history, chronological. `next_cursor`: paging back (`before`, or no cursor) it is the
 * `before` of the next older page, null when there is no older message; paging forward (`after`)
 * it is the `after` of the next page, null when there is no newer message yet.
 */
export interface HistoryPage {
  messages: Message[];
  next_cursor: number | null;
}

export interface HistoryQuery {
  /** 1 to 500; default 50 */
  limit?: number;
  /** Messages with a smaller seq: the newest `limit` of them. */
  before?: number;
  /** Messages with a greater seq: the oldest `limit` of them. */
  after?: number;
}

/** Store access inside a caller's transaction (a subscription handler's `tx`). */
export interface InTransaction {
  tx?: Store;
}

export class Channels {
  private readonly watchers = new Set<(message: Message) => void>();

  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
  ) {}

  /**
   * Posts a message. A repeated `event_id` in the same channel returns the first message with
   * `created: false` and writes nothing, also when the posts race: no subscriber sees it twice.
   */
  async post(channelId: string, input: PostInput, options: InTransaction = {}): Promise<PostResult> {
    const channel = checkChannelId(channelId);
    const { event_id, ...fields } = checkPost(input);
    const eventId = event_id ?? newId('evt');
    const data: MessageData = { event_id: eventId, message_id: newId('msg'), ...fields };
    const appended = await this.journal.append(channelStream(channel), [{ type: MESSAGE_POSTED, data }], {
      idempotencyKey: postKey(channel, eventId),
      ...(options.tx ? { tx: options.tx } : {}),
    });
    const event = appended.events[0];
    if (!event) throw new Error(`the journal returned no event for ${eventId} in channel ${channel}`);
    const message = toMessage(event);
    // committed now (inside a caller's transaction it is not yet: those reach watchers through the journal)
    if (!appended.duplicate && !options.tx) for (const watcher of this.watchers) watcher(message);
    return { message, created: !appended.duplicate };
  }

  /**
   * Calls `fn` with each message this object posts and commits on its own, right after the commit:
   * this process's live delivery needs no read for them. Others arrive through the journal.
   */
  watch(fn: (message: Message) => void): () => void {
    this.watchers.add(fn);
    return () => void this.watchers.delete(fn);
  }

  /** A page of a channel's messages (see `HistoryPage`); a channel without messages has an empty history. */
  async history(channelId: string, query: HistoryQuery = {}, options: InTransaction = {}): Promise<HistoryPage> {
    const streamId = channelStream(checkChannelId(channelId));
    const limit = whole('limit', query.limit ?? 50, 1, 500);
    const tx = options.tx ? { tx: options.tx } : {};
    if (query.after !== undefined) {
      if (query.before !== undefined) throw new ValidationError('before', 'cannot be combined with after');
      const after = whole('after', query.after, 0);
      const events = await this.journal.readStream(streamId, { fromVersion: after + 1, limit: limit + 1, ...tx });
      const messages = events.slice(0, limit).map(toMessage);
      return { messages, next_cursor: events.length > limit ? (messages.at(-1)?.seq ?? null) : null };
    }
    const before = query.before === undefined ? undefined : whole('before', query.before, 1);
    if (before === 1) return { messages: [], next_cursor: null };
    const events = await this.journal.readStream(streamId, {
      backwards: true,
      limit,
      ...(before === undefined ? {} : { fromVersion: before - 1 }),
      ...tx,
    });
    const messages = events.map(toMessage).reverse();
    const oldest = messages[0]?.seq;
    return { messages, next_cursor: oldest !== undefined && oldest > 1 ? oldest : null };
  }

  /** One message by its seq; NotFoundError when the channel has no such message. */
  async get(channelId: string, seq: number, options: InTransaction = {}): Promise<Message> {
    const channel = checkChannelId(channelId);
    const version = whole('seq', seq, 1);
    const [event] = await this.journal.readStream(channelStream(channel), {
      fromVersion: version,
      limit: 1,
      ...(options.tx ? { tx: options.tx } : {}),
    });
    if (!event || event.version !== version) throw new NotFoundError(`channel ${channel} has no message ${version}`);
    return toMessage(event);
  }

  /** One channel's summary, or undefined when nothing was posted to it. */
  async channel(channelId: string): Promise<ChannelSummary | undefined> {
    const [last] = await this.journal.readStream(channelStream(checkChannelId(channelId)), {
      backwards: true,
      limit: 1,
    });
    return last ? summary({ streamId: last.streamId, version: last.version, updatedAt: last.timestamp }) : undefined;
  }

  /** Channels in id order (bytewise); `next_cursor` is the `after` of the next page, null on the last. */
  async list(
    query: { limit?: number; after?: string } = {},
  ): Promise<{ channels: ChannelSummary[]; next_cursor: string | null }> {
    const limit = whole('limit', query.limit ?? 50, 1, 500);
    const after = query.after === undefined ? undefined : channelStream(checkChannelId(query.after, 'after'));
    const rows = await this.store.streamList({
      prefix: channelStream(''),
      limit: limit + 1,
      ...(after === undefined ? {} : { after }),
    });
    const channels = rows.slice(0, limit).map(summary);
    return { channels, next_cursor: rows.length > limit ? (channels.at(-1)?.channel_id ?? null) : null };
  }
}

/** A channel's stream holds only its messages, so its version is both the last seq and the count. */
function summary(stream: StreamInfo): ChannelSummary {
  const channel_id = channelOf(stream.streamId)!;
  return {
    channel_id,
    last_seq: stream.version,
    message_count: stream.version,
    last_ts: stream.updatedAt,
    updated_at: new Date(stream.updatedAt).toISOString(),
  };
}

function whole(path: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ValidationError(
      path,
      max === Number.MAX_SAFE_INTEGER
        ? `must be a whole number ≥ ${min}`
        : `must be a whole number from ${min} to ${max}`,
    );
  }
  return value;
}
