import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { Channels } from './channels.js';
import type { PostInput } from './message.js';

const user = (content: string, extra: Partial<PostInput> = {}): PostInput => ({
  sender_id: 'u1',
  role: 'user',
  content,
  ...extra,
});

describe.each(backends)('channels on $name', (backend) => {
  let engine: Engine;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  let channels: Channels;
  beforeEach(async () => {
    ({ engine, second, close } = await testEngine(backend));
    channels = new Channels(engine.store, engine.journal);
  });
  afterEach(() => close());

  const postMany = async (channelId: string, n: number) => {
    for (let i = 1; i <= n; i++) await channels.post(channelId, user(`m${i}`));
  };
  const seqs = (page: { messages: Array<{ seq: number }> }) => page.messages.map((m) => m.seq);

  it('stores messages as the channel stream, numbered 1…n, and reads them back', async () => {
    const before = Date.now();
    const { message, created } = await channels.post(
      'general',
      user('hello', { content_type: 'markdown', metadata: { lang: 'en' } }),
    );
    expect(created).toBe(true);
    expect(message).toMatchObject({
      channel_id: 'general',
      seq: 1,
      sender_id: 'u1',
      role: 'user',
      content: 'hello',
      content_type: 'markdown',
      metadata: { lang: 'en' },
    });
    expect(message.event_id).toMatch(/^evt_[0-9A-Z]{26}$/);
    expect(message.message_id).toMatch(/^msg_[0-9A-Z]{26}$/);
    expect(message.ts).toBeGreaterThanOrEqual(before - 5_000);
    expect(message.created_at_iso).toBe(new Date(message.ts).toISOString());
    await postMany('general', 4);
    const page = await channels.history('general');
    expect(seqs(page)).toEqual([1, 2, 3, 4, 5]);
    expect(page.messages[0]).toEqual(message);
    expect(page.next_cursor).toBeNull();
    expect(await channels.get('general', 1)).toEqual(message);
    await expect(channels.get('general', 6)).rejects.toThrow(NotFoundError);
    const [event] = await engine.journal.readStream('channel:general', { limit: 1 });
    expect(event).toMatchObject({ type: 'message.posted', version: 1 });
    expect(await channels.history('nobody-here')).toEqual({ messages: [], next_cursor: null });
  });

  it('pages backwards with before and forwards with after', async () => {
    await postMany('c', 7);
    const newest = await channels.history('c', { limit: 3 });
    expect([seqs(newest), newest.next_cursor]).toEqual([[5, 6, 7], 5]);
    const older = await channels.history('c', { limit: 3, before: 5 });
    expect([seqs(older), older.next_cursor]).toEqual([[2, 3, 4], 2]);
    const oldest = await channels.history('c', { limit: 3, before: 2 });
    expect([seqs(oldest), oldest.next_cursor]).toEqual([[1], null]);
    expect(await channels.history('c', { before: 1 })).toEqual({ messages: [], next_cursor: null });
    const first = await channels.history('c', { limit: 3, after: 0 });
    expect([seqs(first), first.next_cursor]).toEqual([[1, 2, 3], 3]);
    const next = await channels.history('c', { limit: 3, after: 3 });
    expect([seqs(next), next.next_cursor]).toEqual([[4, 5, 6], 6]);
    const last = await channels.history('c', { limit: 3, after: 6 });
    expect([seqs(last), last.next_cursor]).toEqual([[7], null]);
    const exact = await channels.history('c', { limit: 4, after: 3 });
    expect([seqs(exact), exact.next_cursor]).toEqual([[4, 5, 6, 7], null]);
    expect(last.messages[0]?.content).toBe('m7');
  });

  it('returns the first message for a repeated event_id and writes nothing, per channel', async () => {
    const first = await channels.post('a', user('original', { event_id: 'e-1' }));
    const again = await channels.post('a', user('changed', { event_id: 'e-1', sender_id: 'u2' }));
    expect(first.created).toBe(true);
    expect(again).toEqual({ message: first.message, created: false });
    expect((await channels.history('a')).messages).toEqual([first.message]);
    expect(await engine.journal.readStream('channel:a')).toHaveLength(1);
    expect((await channels.channel('a'))?.message_count).toBe(1);
    const elsewhere = await channels.post('b', user('same id, other channel', { event_id: 'e-1' }));
    expect(elsewhere.created).toBe(true);
    expect(elsewhere.message.message_id).not.toBe(first.message.message_id);
  });

  it('writes one message when posts of one event_id race, from two processes', async () => {
    const process2 = await second();
    const other = new Channels(process2.store, process2.journal);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? channels : other).post('race', user(`attempt ${i}`, { event_id: 'same' })),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.message.message_id)).size).toBe(1);
    expect(new Set(results.map((r) => r.message.content)).size).toBe(1);
    expect(seqs(await channels.history('race'))).toEqual([1]);
    expect((await channels.channel('race'))?.message_count).toBe(1);
  });

  it('rejects bad input naming the field, and writes nothing', async () => {
    const cases: Array<[string, () => Promise<unknown>]> = [
      ['channel_id', () => channels.post('bad channel', user('x'))],
      ['role', () => channels.post('v', user('x', { role: 'robot' as never }))],
      ['content', () => channels.post('v', user('x'.repeat(64 * 1024 + 1)))],
      ['content', () => channels.post('v', user('nul \u0000 inside'))],
      ['metadata', () => channels.post('v', user('x', { metadata: { big: 'y'.repeat(16 * 1024) } }))],
      ['sender_id', () => channels.post('v', user('x', { sender_id: '' }))],
      ['event_id', () => channels.post('v', user('x', { event_id: 'e'.repeat(201) }))],
      ['limit', () => channels.history('v', { limit: 501 })],
      ['before', () => channels.history('v', { before: 0 })],
      ['after', () => channels.history('v', { after: -1 })],
      ['before', () => channels.history('v', { before: 3, after: 1 })],
      ['after', () => channels.list({ after: 'no spaces allowed' })],
    ];
    for (const [path, call] of cases) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, path).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).path).toBe(path);
    }
    expect(await engine.journal.readAll()).toEqual([]);
    expect((await channels.list()).channels).toEqual([]);
  });

  it('keeps every channel gapless and each writer in order under concurrent writers', async () => {
    const channelIds = Array.from({ length: 20 }, (_, c) => `load-${String(c).padStart(2, '0')}`);
    const perChannel = 25;
    const writers = 4;
    const process2 = await second();
    const other = new Channels(process2.store, process2.journal);
    // writer w posts messages i ≡ w (mod 4) of every channel, one after another
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        const via = w % 2 === 0 ? channels : other;
        for (let i = w; i < perChannel; i += writers) {
          for (const id of channelIds)
            await via.post(id, user(`w${w} #${i}`, { sender_id: `writer-${w}`, metadata: { writer: w, i } }));
        }
      }),
    );
    for (const id of channelIds) {
      const { messages, next_cursor } = await channels.history(id, { limit: 500 });
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: perChannel }, (_, k) => k + 1));
      expect(next_cursor).toBeNull();
      for (let w = 0; w < writers; w++) {
        const mine = messages.filter((m) => m.metadata.writer === w).map((m) => m.metadata.i);
        expect(mine).toEqual(Array.from({ length: perChannel }, (_, k) => k).filter((k) => k % writers === w));
      }
    }
    const { channels: listed, next_cursor } = await channels.list({ limit: 500 });
    expect(listed.map((c) => [c.channel_id, c.last_seq, c.message_count])).toEqual(
      channelIds.map((id) => [id, perChannel, perChannel]),
    );
    expect(next_cursor).toBeNull();
  });

  it('lists channels in id order with their counts, page by page', async () => {
    await postMany('beta', 3);
    await postMany('alpha', 1);
    await postMany('gamma', 2);
    const last = (await channels.history('beta')).messages.at(-1)!;
    const first = await channels.list({ limit: 2 });
    expect(first.channels.map((c) => [c.channel_id, c.message_count])).toEqual([
      ['alpha', 1],
      ['beta', 3],
    ]);
    expect(first.channels[1]).toEqual({
      channel_id: 'beta',
      last_seq: 3,
      message_count: 3,
      last_ts: last.ts,
      updated_at: last.created_at_iso,
    });
    expect(first.next_cursor).toBe('beta');
    const rest = await channels.list({ limit: 2, after: 'beta' });
    expect(rest.channels.map((c) => [c.channel_id, c.last_seq])).toEqual([['gamma', 2]]);
    expect(rest.next_cursor).toBeNull();
  });
});
