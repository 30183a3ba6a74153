import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { Channels } from '../chat/channels.js';
import { ChannelFeed } from '../chat/feed.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { watch } from '../testing/socket.js';
import { listen } from './listen.js';
import { ChannelSockets } from './ws.js';

const postFrame = (content: string) => JSON.stringify({ type: 'post', message: { sender_id: 'u', role: 'user', content } });

describe.each(backends)('a WebSocket post that fails on $name', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('answers a failed post with an error frame, and one whose error cannot even be described closes that socket with 1011, never the process', async () => {
    const t = await testEngine(backend);
    const channels = new Channels(t.engine.store, t.engine.journal);
    const feed = await ChannelFeed.open(t.engine.store, channels);
    const sockets = new ChannelSockets({ channels, feed });
    const listening = await listen(new Hono(), { host: '127.0.0.1', port: 0, upgrade: sockets.upgrade });
    cleanups.push(async () => {
      sockets.close();
      await listening.close();
      await feed.close();
      await t.close();
    });
    const client = watch(listening.url, 'general');
    await client.open;
    client.ws.send('{not json');
    await eventually(() => client.frames.some((f) => f.type === 'error'));
    const real = channels.post.bind(channels);
    // a thrown value with no string form: describing it for the error frame throws too, so post() itself rejects
    channels.post = async () => {
      channels.post = real;
      throw Object.create(null);
    };
    client.ws.send(postFrame('one'));
    expect((await client.closed).code).toBe(1011);
    const next = watch(listening.url, 'general');
    await next.open;
    next.ws.send(postFrame('two'));
    await eventually(() => next.frames.some((f) => f.type === 'posted'));
    expect(next.messages.map((m) => m.content)).toEqual(['two']);
    next.ws.close();
  });
});
