import { Hono } from 'hono';
import { WebSocket } from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { Channels } from '../chat/channels.js';
import { ChannelFeed } from '../chat/feed.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { refusal, watch } from '../testing/socket.js';
import { listen } from './listen.js';
import { ChannelSockets } from './ws.js';

describe.each(backends)('WebSocket delivery on $name', (backend) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const serve = async (options: { maxBufferedBytes?: number; stallMs?: number; token?: string } = {}) => {
    const t = await testEngine(backend);
    const channels = new Channels(t.engine.store, t.engine.journal);
    const feed = await ChannelFeed.open(t.engine.journal, channels);
    const sockets = new ChannelSockets({ channels, feed, ...options });
    const listening = await listen(new Hono(), { host: '127.0.0.1', port: 0, upgrade: sockets.upgrade });
    cleanups.push(async () => {
      sockets.close();
      await listening.close();
      await feed.close();
      await t.close();
    });
    return { url: listening.url, channels, feed };
  };

  it('paces a slow reader, cuts off one that stops reading without buffering its backlog, and it resumes with after=', async () => {
    const { url, channels, feed } = await serve({ maxBufferedBytes: 64 * 1024, stallMs: 200 });
    const slow = watch(url, 'firehose');
    await slow.open;
    await eventually(() => feed.count('firehose') === 1);
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const content = 'x'.repeat(64_000);
    // post until the server drops it (the kernel's socket buffers take some megabytes first), then a few more
    let posted = 0;
    for (let extra = 0; extra < 10 && posted < 3000; posted++) {
      await channels.post('firehose', { sender_id: 'u', role: 'system', content });
      if (feed.count('firehose') === 0) extra++;
      else await new Promise((r) => setTimeout(r, 2));
    }
    // dropped: it holds no follower (and no queue) for the client any more
    expect(feed.count('firehose')).toBe(0);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await slow.closed;
    expect(closed.code).toBe(1013);
    const after = Number(/after=(\d+)/.exec(closed.reason)![1]);
    expect(slow.seqs()).toEqual(Array.from({ length: after }, (_, i) => i + 1));
    expect(after).toBeLessThan(posted);
    const again = watch(url, 'firehose', after);
    await eventually(() => again.messages.length === posted - after, 20_000);
    expect(again.seqs()[0]).toBe(after + 1);
    again.ws.close();
  });

  it('refuses a bad channel id, a bad after, and a missing token before upgrading', async () => {
    const { url } = await serve({ token: 't0ken' });
    expect((await refusal(`${url}/channels/ok/ws`)).status).toBe(401);
    expect(await refusal(`${url}/channels/ok/ws?token=t0ken&after=-1`)).toMatchObject({
      status: 400,
      body: expect.stringMatching(/after/),
    });
    expect((await refusal(`${url}/channels/bad%20id/ws?token=t0ken`)).status).toBe(400);
    expect((await refusal(`${url}/elsewhere`)).status).toBe(404);
    const ok = new WebSocket(`${url.replace('http', 'ws')}/channels/ok/ws?token=t0ken`);
    await new Promise((resolve, reject) => ok.once('open', resolve).once('error', reject));
    ok.close();
  });
});
