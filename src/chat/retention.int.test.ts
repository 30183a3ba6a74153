import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { Channels } from './channels.js';
import { chatRetention } from './retention.js';

describe.each(backends)('chat retention on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });

  it("deletes a channel's old messages oldest first, keeps its newest, and numbering goes on", async () => {
    const made = await testEngine(backend);
    close = made.close;
    const { engine } = made;
    const channels = new Channels(engine.store, engine.journal);
    engine.retention.register(chatRetention());
    for (let i = 1; i <= 5; i++) await channels.post('general', { sender_id: 'u1', role: 'user', content: `m${i}` });
    await channels.post('quiet', { sender_id: 'u1', role: 'user', content: 'only' });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(await engine.retention.prune({ chat: 3_600_000 })).toEqual([expect.objectContaining({ other: 0 })]);
    const [pruned] = await engine.retention.prune({ chat: 0 }, { batchSize: 2, pauseMs: 0 });
    expect(pruned).toMatchObject({ kind: 'chat', other: 4, events: 4 });
    const page = await channels.history('general', { limit: 10 });
    expect(page.messages.map((m) => [m.seq, m.content])).toEqual([[5, 'm5']]);
    expect((await channels.history('quiet', { limit: 10 })).messages.map((m) => m.content)).toEqual(['only']);
    const next = await channels.post('general', { sender_id: 'u1', role: 'user', content: 'm6' });
    expect(next.message.seq).toBe(6);
  });
});
