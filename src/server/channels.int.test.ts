import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import type { Message } from '../chat/message.js';
import type { Model } from '../runtime/model.js';
import { backends, type Backend } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { watch } from '../testing/socket.js';
import { startServer, type Server } from './start.js';

/** A model that fails while `failing` is set, then answers. */
function flakyProvider() {
  const state = { failing: true, calls: 0 };
  const provider: Model = {
    id: 'flaky',
    continuation: 'restart',
    async *stream({ messages }) {
      state.calls++;
      if (state.failing) throw new Error('model unavailable');
      yield { type: 'text', text: 'ok: ' };
      yield { type: 'text', text: `${messages.at(-1)?.content}` };
      yield { type: 'finish', finishReason: 'stop' };
    },
  };
  return { provider, state };
}

const silent = pino({ level: 'silent' });

describe.each(backends)('channels over HTTP and WebSocket on $name', (backend: Backend) => {
  const servers: Server[] = [];
  const sockets: WebSocket[] = [];
  afterEach(async () => {
    for (const ws of sockets.splice(0)) ws.terminate();
    for (const s of servers.splice(0)) await s.close();
  });

  const start = async (options: Parameters<typeof startServer>[0] = {}) => {
    const server = await startServer({
      database: await backend.create(),
      port: 0,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-chat-')),
      logger: silent,
      pollMs: 100,
      ...options,
    });
    servers.push(server);
    const post = async (channel: string, body: unknown) => {
      const res = await fetch(`${server.url}/channels/${channel}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json() };
    };
    const get = async (path: string) => (await fetch(server.url + path)).json();
    const client = (channel: string, after = 0) => {
      const c = watch(server.url, channel, after);
      sockets.push(c.ws);
      return c;
    };
    return { server, post, get, client };
  };

  it('posts, dedupes by event_id, validates, pages history and lists channels', async () => {
    const { post, get } = await start({ workers: false });
    const first = await post('general', { event_id: 'e-1', sender_id: 'u1', role: 'user', content: 'hello' });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      channel_id: 'general',
      seq: 1,
      event_id: 'e-1',
      role: 'user',
      content: 'hello',
      content_type: 'text',
    });
    const again = await post('general', { event_id: 'e-1', sender_id: 'u1', role: 'user', content: 'changed' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const bad = await post('general', { sender_id: 'u1', role: 'robot', content: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('role');
    expect(
      (await post('general', { sender_id: 'u1', role: 'user', content: 'x'.repeat(70_000) })).body.error.message,
    ).toMatch(/content.*64/);
    expect((await post('bad channel!', { sender_id: 'u1', role: 'user', content: 'x' })).status).toBe(400);
    for (let i = 2; i <= 5; i++) await post('general', { sender_id: 'u1', role: 'user', content: `m${i}` });
    const page = await get('/channels/general/messages?limit=2');
    expect(page.messages.map((m: Message) => m.seq)).toEqual([4, 5]);
    expect(page.next_cursor).toBe(4);
    expect((await get('/channels/general/messages?after=3')).messages.map((m: Message) => m.seq)).toEqual([4, 5]);
    expect((await get('/channels')).channels).toMatchObject([{ channel_id: 'general', last_seq: 5, message_count: 5 }]);
  });

  it('stores one message and one AI reply for two concurrent posts of one event_id', async () => {
    const { post, get, client } = await start();
    const watcher = client('support');
    await watcher.open;
    const [a, b] = await Promise.all(
      [1, 2].map(() =>
        post('support', { event_id: 'dup-1', sender_id: 'u1', role: 'user', content: 'where is my order?' }),
      ),
    );
    expect([a!.status, b!.status].sort()).toEqual([200, 201]);
    await eventually(() => watcher.messages.length === 2);
    const history = await get('/channels/support/messages');
    expect(history.messages.map((m: Message) => [m.seq, m.role])).toEqual([
      [1, 'user'],
      [2, 'ai'],
    ]);
    expect(history.messages[1].event_id).toBe('reply:dup-1');
    expect(history.messages[1].content).toContain('where is my order?');
    expect(watcher.frames.some((f) => f.type === 'delta')).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect((await get('/channels/support/messages')).messages).toHaveLength(2);
  });

  it('delivers 20 channels × 100 messages from 4 concurrent writers, in order, to every socket', async () => {
    const { server, get, client } = await start({ workers: false });
    const channels = Array.from({ length: 20 }, (_, i) => `room-${i}`);
    const watchers = channels.map((c) => client(c));
    await Promise.all(watchers.map((w) => w.open));
    const writer = async (w: number) => {
      for (let i = 0; i < 25; i++) {
        await Promise.all(
          channels.map((c) =>
            server.channels.post(c, { sender_id: `writer-${w}`, role: 'user', content: `w${w}-${i}` }),
          ),
        );
      }
    };
    await Promise.all([0, 1, 2, 3].map(writer));
    const expected = Array.from({ length: 100 }, (_, i) => i + 1);
    for (const [i, c] of channels.entries()) {
      const history = await get(`/channels/${c}/messages?after=0&limit=500`);
      expect(history.messages.map((m: Message) => m.seq)).toEqual(expected);
      for (const w of [0, 1, 2, 3]) {
        const own = history.messages
          .filter((m: Message) => m.sender_id === `writer-${w}`)
          .map((m: Message) => m.content);
        expect(own).toEqual(Array.from({ length: 25 }, (_, n) => `w${w}-${n}`));
      }
      await eventually(() => watchers[i]!.messages.length >= 100);
      expect(watchers[i]!.seqs()).toEqual(expected);
    }
  });

  it('a client reconnecting with after= gets exactly the messages it missed', async () => {
    const { post, client } = await start({ workers: false });
    const first = client('r');
    await first.open;
    for (let i = 1; i <= 5; i++) await post('r', { sender_id: 'u', role: 'system', content: `m${i}` });
    await eventually(() => first.messages.length === 5);
    first.ws.close();
    await first.closed;
    for (let i = 6; i <= 9; i++) await post('r', { sender_id: 'u', role: 'system', content: `m${i}` });
    const second = client('r', first.seqs().at(-1));
    await eventually(() => second.messages.length === 4);
    await post('r', { sender_id: 'u', role: 'system', content: 'm10' });
    await eventually(() => second.messages.length === 5);
    expect(second.seqs()).toEqual([6, 7, 8, 9, 10]);
  });

  it('parks a message whose model keeps failing, keeps other channels flowing, and replies once after a redrive', async () => {
    const { provider, state } = flakyProvider();
    const { post, get } = await start({ chatModel: provider });
    await post('a', { sender_id: 'u', role: 'user', content: 'first' });
    const parked = await eventually(async () => {
      const { parked } = await get('/subscriptions/chat.ai-reply/parked');
      return parked.length === 1 ? parked[0] : undefined;
    }, 20_000);
    expect(parked).toMatchObject({ status: 'parked', error: 'Error: model unavailable', stream_id: 'channel:a' });
    expect((await get('/subscriptions')).subscriptions).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'chat.ai-reply', parked: 1 })]),
    );
    state.failing = false;
    await post('b', { sender_id: 'u', role: 'user', content: 'second' });
    await eventually(async () => (await get('/channels/b/messages')).messages.length === 2);
    const retried = await fetch(`${servers[0]!.url}/subscriptions/chat.ai-reply/parked/${parked.position}/retry`, {
      method: 'POST',
    });
    expect(retried.status).toBe(202);
    await eventually(async () => (await get('/channels/a/messages')).messages.length === 2);
    const calls = state.calls;
    await new Promise((r) => setTimeout(r, 300));
    expect((await get('/channels/a/messages')).messages.map((m: Message) => m.content)).toEqual(['first', 'ok: first']);
    expect(state.calls).toBe(calls);
    expect((await get('/subscriptions/nope/parked')).error.code).toBe('not_found');
  });

  it('lets a client post over its socket with the same idempotency', async () => {
    const { client, get } = await start({ workers: false });
    const c = client('sock');
    await c.open;
    const frame = JSON.stringify({
      type: 'post',
      message: { event_id: 'ws-1', sender_id: 'u', role: 'user', content: 'via socket' },
    });
    c.ws.send(frame);
    c.ws.send(frame);
    for (let i = 1; i <= 5; i++)
      c.ws.send(JSON.stringify({ type: 'post', message: { sender_id: 'u', role: 'user', content: `quick ${i}` } }));
    c.ws.send('{"type":"post","message":{"sender_id":"u","role":"nope","content":"x"}}');
    await eventually(() => c.frames.filter((f) => f.type !== 'message').length === 8);
    expect(
      c.frames.filter((f) => f.type === 'posted').map((f) => (f as unknown as { created: boolean }).created),
    ).toEqual([true, false, true, true, true, true, true]);
    expect(c.frames.find((f) => f.type === 'error')).toMatchObject({ error: { code: 'validation' } });
    // in the order they were sent over the socket
    expect((await get('/channels/sock/messages')).messages.map((m: Message) => m.content)).toEqual([
      'via socket',
      'quick 1',
      'quick 2',
      'quick 3',
      'quick 4',
      'quick 5',
    ]);
    await eventually(() => c.messages.length === 6);
    expect(c.seqs()).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
