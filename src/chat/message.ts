import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.js';
import { checkJson, formatBytes } from '../json.js';
import type { StoredEvent } from '../storage/store.js';

/** The event type of a chat message, in the stream `channel:<channel_id>`. */
export const MESSAGE_POSTED = 'message.posted';

export const CHANNEL_STREAM_PREFIX = 'channel:';

export const ROLES = ['user', 'ai', 'system'] as const;
export type Role = (typeof ROLES)[number];

export const CONTENT_TYPES = ['text', 'markdown'] as const;
export type ContentType = (typeof CONTENT_TYPES)[number];

/** What a message may hold; a post over any of them is a ValidationError that names the field and the limit. */
export const MESSAGE_LIMITS = {
  channelId: /^[A-Za-z0-9_.:-]{1,128}$/,
  contentBytes: 64 * 1024,
  metadataBytes: 16 * 1024,
  senderIdChars: 200,
  eventIdChars: 200,
} as const;

/** `event_id`s starting with this belong to AI replies (`reply:<event_id of the user message>`). */
export const REPLY_PREFIX = 'reply:';

/** The part of a message stored in its event; the rest comes from the event itself. */
export interface MessageData {
  event_id: string;
  message_id: string;
  sender_id: string;
  role: Role;
  content: string;
  content_type: ContentType;
  metadata: Record<string, unknown>;
}

/**
 * One chat message: the `message.posted` event of its channel's stream, as readers see it.
 * `seq` is the event's stream version (1, 2, 3 … per channel, without gaps) and `ts` its
 * timestamp (ms, database clock).
 */
export interface Message extends MessageData {
  channel_id: string;
  seq: number;
  ts: number;
  created_at_iso: string;
}

/** A message to post; `event_id` is the idempotency key (a ULID `evt_…` when absent). */
export interface PostInput {
  event_id?: string;
  sender_id: string;
  role: Role;
  content: string;
  content_type?: ContentType;
  metadata?: Record<string, unknown>;
}

/** Checks a post; returns it with defaults filled in and metadata as it will be stored (plain JSON). */
export function checkPost(
  input: unknown,
): Omit<MessageData, 'message_id' | 'event_id'> & { event_id: string | undefined } {
  if (!isObject(input)) throw new ValidationError('message', 'must be an object');
  const role = oneOf('role', input.role, ROLES);
  const event_id =
    input.event_id === undefined ? undefined : text('event_id', input.event_id, MESSAGE_LIMITS.eventIdChars);
  if (event_id?.startsWith(REPLY_PREFIX) && role !== 'ai') {
    throw new ValidationError('event_id', `the prefix "${REPLY_PREFIX}" is reserved for AI replies (role ai)`);
  }
  const sender_id = text('sender_id', input.sender_id, MESSAGE_LIMITS.senderIdChars);
  const content = checkContent(input.content);
  const content_type =
    input.content_type === undefined ? 'text' : oneOf('content_type', input.content_type, CONTENT_TYPES);
  return { event_id, sender_id, role, content, content_type, metadata: checkMetadata(input.metadata) };
}

export function checkChannelId(channelId: unknown, path = 'channel_id'): string {
  if (typeof channelId !== 'string' || !MESSAGE_LIMITS.channelId.test(channelId)) {
    throw new ValidationError(path, 'must be 1 to 128 characters of A-Z a-z 0-9 _ . : -');
  }
  return channelId;
}

function checkContent(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '')
    throw new ValidationError('content', 'must be a non-empty string');
  const bytes = Buffer.byteLength(value);
  if (bytes > MESSAGE_LIMITS.contentBytes) {
    throw new ValidationError(
      'content',
      `is ${formatBytes(bytes)}, over the limit of ${formatBytes(MESSAGE_LIMITS.contentBytes)}`,
    );
  }
  storable('content', value);
  return value;
}

function checkMetadata(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (!isObject(value)) throw new ValidationError('metadata', 'must be a JSON object');
  checkJson('metadata', value, MESSAGE_LIMITS.metadataBytes);
  const plain = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  walkStrings(plain, (s) => storable('metadata', s));
  return plain;
}

function text(path: string, value: unknown, max: number): string {
  if (typeof value !== 'string' || value.length === 0) throw new ValidationError(path, 'must be a non-empty string');
  if (value.length > max) throw new ValidationError(path, `is ${value.length} characters, over the limit of ${max}`);
  return storable(path, value);
}

function oneOf<T extends string>(path: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ValidationError(path, `must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * PostgreSQL's jsonb refuses U+0000 and unpaired surrogates, which SQLite would store: refuse
 * them on both, as a ValidationError rather than a database error.
 */
function storable(path: string, value: string): string {
  if (value.includes('\u0000')) throw new ValidationError(path, 'must not contain the character U+0000');
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value)) {
    throw new ValidationError(path, 'must be well-formed Unicode (it has an unpaired surrogate)');
  }
  return value;
}

function walkStrings(value: unknown, visit: (s: string) => void): void {
  if (typeof value === 'string') visit(value);
  else if (Array.isArray(value))
    value.forEach((v) => {
      walkStrings(v, visit);
    });
  else if (isObject(value)) {
    for (const [key, v] of Object.entries(value)) {
      visit(key);
      walkStrings(v, visit);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function channelStream(channelId: string): string {
  return CHANNEL_STREAM_PREFIX + channelId;
}

/** The channel of a stream id, or null when the stream is not a channel's. */
export function channelOf(streamId: string): string | null {
  return streamId.startsWith(CHANNEL_STREAM_PREFIX) ? streamId.slice(CHANNEL_STREAM_PREFIX.length) : null;
}

/**
 * The journal idempotency key of a post. Scoped to the channel: one `event_id` in two channels is
 * two messages. Channel ids cannot contain `/`, so the readable form is unambiguous; a pair too
 * long for the journal's 256-character keys is hashed, under a prefix the readable form never has.
 */
export function postKey(channelId: string, eventId: string): string {
  const readable = `chat/${channelId}/${eventId}`;
  if (readable.length <= 256) return readable;
  return `chat#sha256:${createHash('sha256').update(`${channelId}/${eventId}`).digest('hex')}`;
}

/** The `event_id` of the AI reply to a message: derived, so every retry of the reply writes it once. */
export function replyEventId(eventId: string): string {
  const derived = REPLY_PREFIX + eventId;
  if (derived.length <= MESSAGE_LIMITS.eventIdChars) return derived;
  return `${REPLY_PREFIX}sha256:${createHash('sha256').update(eventId).digest('hex')}`;
}

/** A `message.posted` event as a message. */
export function toMessage(event: StoredEvent): Message {
  const data = event.data as MessageData;
  return {
    channel_id: channelOf(event.streamId) ?? event.streamId,
    seq: event.version,
    ts: event.timestamp,
    event_id: data.event_id,
    message_id: data.message_id,
    sender_id: data.sender_id,
    role: data.role,
    content: data.content,
    content_type: data.content_type,
    created_at_iso: new Date(event.timestamp).toISOString(),
    metadata: data.metadata ?? {},
  };
}
