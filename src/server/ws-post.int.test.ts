import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { Channels } from '../chat/channels.js';
import { ChannelFeed } from '../chat/feed.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { watch } from '../testing/socket.js';
import { listen } from './listen.js';
import { ChannelSockets } from './ws.js';

const postFrame = (content: string) =>
  JSON.stringify({ type: 'post', message: { sender_id: 'u', role: 'user', content } });

describe.each(backends)('a WebSocket post that fails on $name', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const serve = async () => {
    const t = await testEngine(backend);
    const channels = new Channels(t.engine.store, t.engine.journal);
    const feed = await ChannelFeed.open(t.engine.journal, channels);
    const sockets = new ChannelSockets({ channels, feed });
    const listening = await listen(new Hono(), { host: '127.0.0.1', port: 0, upgrade: sockets.upgrade });
    cleanups.push(async () => {
      sockets.close();
      await listening.close();
      await feed.close();
      await t.close();
    });
    return { url: listening.url, channels };
  };

  it('answers a frame that is no post with a validation error frame, however deep or long its type', async () => {
    const { url } = await serve();
    const client = watch(url, 'general');
    await client.open;
    const errors = () =>
      client.frames.filter((f) => f.type === 'error') as unknown as { error: { code: string; message: string } }[];
    client.ws.send('{not json');
    // JSON.stringify of this type, to name it in the error, overflowed the stack: an internal error
    client.ws.send(`{"type":${'['.repeat(5_000)}${']'.repeat(5_000)}}`);
    client.ws.send(JSON.stringify({ type: 'x'.repeat(60_000) }));
    await eventually(() => errors().length === 3);
    expect(errors().map((e) => e.error.code)).toEqual(['validation', 'validation', 'validation']);
    expect(errors()[1]!.error.message).toMatch(/must be 'post' \(got an array\)/);
    expect(errors()[2]!.error.message.length).toBeLessThan(200);
    client.ws.send(postFrame('still here'));
    await eventually(() => client.frames.some((f) => f.type === 'posted'));
    client.ws.close();
  });

  it('reads a client that posts faster than the store takes posts no faster: the rest waits unsent in its buffers, then every post is stored in order', async () => {
    const { url, channels } = await serve();
    const real = channels.post.bind(channels);
    let open: () => void = () => {};
    const held = new Promise<void>((resolve) => (open = resolve));
    channels.post = async (...args) => {
      await held;
      return real(...args);
    };
    const client = watch(url, 'flood');
    await client.open;
    // 24 MB: more than loopback's socket buffers take, so what the server does not read stays with the client
    for (let i = 0; i < 400; i++) client.ws.send(postFrame(`${i} ${'x'.repeat(60_000)}`));
    await new Promise((r) => setTimeout(r, 1_000));
    expect(client.ws.bufferedAmount).toBeGreaterThan(0);
    open();
    await eventually(() => client.frames.filter((f) => f.type === 'posted').length === 400, 30_000);
    expect(
      client.frames
        .filter((f) => f.type === 'posted')
        .map((f) => Number((f as unknown as { message: { content: string } }).message.content.split(' ')[0])),
    ).toEqual(Array.from({ length: 400 }, (_, i) => i));
    client.ws.close();
  });

  it('closes a socket whose post fails beyond an error frame with 1011, never the process, and the next socket posts', async () => {
    const { url, channels } = await serve();
    const client = watch(url, 'general');
    await client.open;
    const real = channels.post.bind(channels);
    // a thrown value with no string form: describing it for the error frame throws too, so post() itself rejects
    channels.post = async () => {
      channels.post = real;
      throw Object.create(null);
    };
    client.ws.send(postFrame('one'));
    expect((await client.closed).code).toBe(1011);
    const next = watch(url, 'general');
    await next.open;
    next.ws.send(postFrame('two'));
    await eventually(() => next.frames.some((f) => f.type === 'posted'));
    expect(next.messages.map((m) => m.content)).toEqual(['two']);
    next.ws.close();
  });
});
