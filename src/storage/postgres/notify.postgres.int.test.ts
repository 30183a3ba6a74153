import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createPostgresDatabase } from '../../testing/databases.js';
import type { Store } from '../store.js';
import { openPostgresStore } from './store.js';

async function until(check: () => boolean, ms = 5000): Promise<void> {
  for (const deadline = Date.now() + ms; !check(); await sleep(10)) {
    if (Date.now() > deadline) throw new Error('timed out');
  }
}

describe('wake-ups on postgres', () => {
  let url: string;
  let listener: Store;
  let writer: Store;
  beforeEach(async () => {
    url = await createPostgresDatabase();
    [listener, writer] = await Promise.all([openPostgresStore(url), openPostgresStore(url)]);
  });
  afterEach(async () => {
    await Promise.all([listener.close(), writer.close()]);
  });

  it('wakes another process after the commit, with the queue as payload', async () => {
    const tasks: string[] = [];
    const events: string[] = [];
    await listener.listen('tasks', (queue) => tasks.push(queue));
    const stop = await listener.listen('events', (payload) => events.push(payload));
    await writer.transaction(async (tx) => {
      await tx.taskEnqueue({
        tasks: [
          {
            id: 't1',
            queue: 'email',
            payload: {},
            idempotencyKey: null,
            orderingKey: null,
            runAt: null,
            priority: 0,
            maxAttempts: 1,
          },
        ],
      });
      await tx.eventAppend({ appends: [{ streamId: 's', events: [{ type: 'E', data: {} }] }] });
      await sleep(100);
      expect([...tasks, ...events]).toEqual([]);
    });
    // the enqueue's event woke its task stream
    await until(() => tasks.length === 1 && events.length === 2);
    expect(tasks).toEqual(['email']);
    expect(events.sort()).toEqual(['s', 'task:t1']);
    await stop();
    await writer.eventAppend({ appends: [{ streamId: 's', events: [{ type: 'E', data: {} }] }] });
    await sleep(100);
    expect(events).toHaveLength(2);
  });

  it('reconnects after losing its connection and wakes every listener once', async () => {
    const woken: string[] = [];
    await listener.listen('events', (payload) => woken.push(`events:${payload}`));
    await listener.listen('tasks', (payload) => woken.push(`tasks:${payload}`));
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rowCount } = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN runledger_%'",
      );
      expect(rowCount).toBe(1);
    } finally {
      await admin.end();
    }
    await until(() => woken.length === 2);
    expect(woken.sort()).toEqual(['events:', 'tasks:']);
    await writer.eventAppend({ appends: [{ streamId: 's', events: [{ type: 'E', data: {} }] }] });
    await until(() => woken.length === 3);
  });

  it("wakes its own process once per commit (not again from the server) and another once, whatever the stream's name holds", async () => {
    const streams = ["it's", 'back\\slash', 'plain'];
    const here: string[] = [];
    const there: string[] = [];
    await writer.listen('events', (stream) => here.push(stream));
    await listener.listen('events', (stream) => there.push(stream));
    await writer.transaction(async (tx) => {
      for (const streamId of streams)
        await tx.eventAppend({ appends: [{ streamId, events: [{ type: 'E', data: {} }] }] });
    });
    await writer.eventAppend({ appends: [{ streamId: 'outside', events: [{ type: 'E', data: {} }] }] });
    await until(() => here.length >= 4 && there.length >= 4);
    // the server's copies of its own notifications would arrive within this
    await sleep(200);
    expect(here.sort()).toEqual([...streams, 'outside'].sort());
    expect(there.sort()).toEqual([...streams, 'outside'].sort());
  });
});
