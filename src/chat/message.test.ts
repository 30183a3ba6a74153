import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { checkChannelId, checkPost, postKey, replyEventId } from './message.js';

const valid = { sender_id: 'u1', role: 'user', content: 'hello' };

/** The field and message of the ValidationError `fn` throws. */
function rejection(fn: () => unknown): { path: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (error instanceof ValidationError) return { path: error.path, message: error.message };
    throw error;
  }
  throw new Error('expected a ValidationError');
}

describe('checkPost', () => {
  it('fills in the defaults and keeps metadata as plain JSON', () => {
    const checked = checkPost({ ...valid, metadata: { at: new Date(0), skip: undefined } });
    expect(checked).toEqual({
      event_id: undefined,
      sender_id: 'u1',
      role: 'user',
      content: 'hello',
      content_type: 'text',
      metadata: { at: '1970-01-01T00:00:00.000Z' },
    });
  });

  it.each([
    ['role', { ...valid, role: 'bot' }, /one of user, ai, system/],
    ['role', { ...valid, role: undefined }, /one of/],
    ['content', { ...valid, content: '' }, /non-empty/],
    ['content', { ...valid, content: '  \n ' }, /non-empty/],
    ['content', { ...valid, content: 42 }, /non-empty string/],
    ['content_type', { ...valid, content_type: 'html' }, /one of text, markdown/],
    ['sender_id', { ...valid, sender_id: '' }, /non-empty/],
    ['sender_id', { ...valid, sender_id: 's'.repeat(201) }, /201 characters, over the limit of 200/],
    ['event_id', { ...valid, event_id: 'e'.repeat(201) }, /201 characters, over the limit of 200/],
    ['event_id', { ...valid, event_id: '' }, /non-empty/],
    ['event_id', { ...valid, event_id: 'reply:x' }, /reserved for AI replies/],
    ['metadata', { ...valid, metadata: [1, 2] }, /JSON object/],
    ['metadata', { ...valid, metadata: null }, /JSON object/],
    ['metadata', { ...valid, metadata: { blob: 'x'.repeat(16 * 1024) } }, /over the limit of 16 KiB/],
    ['metadata', { ...valid, metadata: { big: 1n } }, /not JSON-serializable/],
    ['metadata', { ...valid, metadata: { 'a\u0000': 1 } }, /U\+0000/],
    ['content', { ...valid, content: 'a\u0000b' }, /U\+0000/],
    ['content', { ...valid, content: 'half \uD83D pair' }, /unpaired surrogate/],
    ['message', 'hello', /an object/],
  ])('names the field %s (case %#)', (path, input, message) => {
    const error = rejection(() => checkPost(input));
    expect(error.path).toBe(path);
    expect(error.message).toMatch(message);
  });

  it('measures content in UTF-8 bytes, up to 64 KiB', () => {
    expect(checkPost({ ...valid, content: 'x'.repeat(64 * 1024) }).content).toHaveLength(64 * 1024);
    // 32 769 characters, but 65 538 bytes
    const error = rejection(() => checkPost({ ...valid, content: 'é'.repeat(32 * 1024 + 1) }));
    expect(error).toEqual({
      path: 'content',
      message: 'content: is 64 KiB (65538 bytes), over the limit of 64 KiB (65536 bytes)',
    });
  });

  it('lets an AI reply use the reply: prefix', () => {
    expect(checkPost({ ...valid, role: 'ai', event_id: 'reply:e1' }).event_id).toBe('reply:e1');
  });
});

describe('channel ids and keys', () => {
  it.each(['', 'has space', 'slash/no', 'c'.repeat(129), 'ümlaut'])('rejects the channel id %j', (id) => {
    expect(rejection(() => checkChannelId(id)).path).toBe('channel_id');
  });

  it('accepts the documented alphabet up to 128 characters', () => {
    expect(checkChannelId('Team_1.general:dev-2')).toBe('Team_1.general:dev-2');
    expect(checkChannelId('c'.repeat(128))).toHaveLength(128);
  });

  it('scopes idempotency keys to the channel and fits them in the journal key limit', () => {
    expect(postKey('a', 'e1')).not.toBe(postKey('b', 'e1'));
    expect(postKey('a:b', 'c')).not.toBe(postKey('a', 'b:c'));
    const long = postKey('c'.repeat(128), 'e'.repeat(200));
    expect(long).toMatch(/^chat#sha256:[0-9a-f]{64}$/);
    expect(postKey('c'.repeat(128), 'e'.repeat(200))).toBe(long);
    expect(postKey('c'.repeat(128), `${'e'.repeat(199)}f`)).not.toBe(long);
  });

  it('derives a reply event_id that stays within the event_id limit', () => {
    expect(replyEventId('evt_1')).toBe('reply:evt_1');
    const long = replyEventId('e'.repeat(200));
    expect(long.length).toBeLessThanOrEqual(200);
    expect(long).toBe(replyEventId('e'.repeat(200)));
    expect(long).not.toBe(replyEventId(`${'e'.repeat(199)}f`));
  });
});
