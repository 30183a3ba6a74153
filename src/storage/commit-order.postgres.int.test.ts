import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPostgresStore } from './postgres/store.js';
import type { Store } from './store.js';
import { createPostgresDatabase } from '../testing/databases.js';

/**
 * PostgreSQL hands out positions when rows are inserted but makes them visible when transactions
 * commit, so position 1 can become visible after position 2. A reader that resumes from "the last
 * position I saw" then skips position 1 for good. This runs the same scenario with that naive
 * reader (which must lose the event, or the scenario proves nothing) and with `eventReadCommitted`.
 */
type Reader = (store: Store, after: string) => Promise<{ types: string[]; cursor: string }>;

const naive: Reader = async (store, after) => {
  const events = await store.eventReadAll({ fromPosition: Number(after || 0) + 1 });
  return { types: events.map((e) => e.type), cursor: String(events.at(-1)?.position ?? after) };
};

const committed: Reader = async (store, after) => {
  const events = await store.eventReadCommitted({ after, limit: 100 });
  return { types: events.map((e) => e.event.type), cursor: events.at(-1)?.cursor ?? after };
};

describe('commit order on postgres', () => {
  let writerA: Store;
  let writerB: Store;
  let reader: Store;
  beforeEach(async () => {
    const url = await createPostgresDatabase();
    [writerA, writerB, reader] = await Promise.all([openPostgresStore(url), openPostgresStore(url), openPostgresStore(url)]);
  });
  afterEach(async () => {
    await Promise.all([writerA.close(), writerB.close(), reader.close()]);
  });

  /** A takes the lower position and commits last; the reader polls between B's and A's commits. */
  async function scenario(read: Reader): Promise<string[]> {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const aHasPosition = new Promise<void>((resolve) => (appended = resolve));
    const a = writerA.transaction(async (tx) => {
      await tx.eventAppend({ appends: [{ streamId: 'a', events: [{ type: 'A', data: {} }] }] });
      appended();
      await gate;
    });
    await aHasPosition;
    let first: { types: string[]; cursor: string };
    try {
      const [b] = (await writerB.eventAppend({ appends: [{ streamId: 'b', events: [{ type: 'B', data: {} }] }] })).events;
      expect((await reader.eventReadAll({})).map((e) => [e.type, e.position])).toEqual([['B', b!.position]]);
      expect(b!.position).toBeGreaterThan(1);
      first = await read(reader, '');
    } finally {
      release();
      await a;
    }
    // wait until both events are past every reader's horizon (other databases' transactions hold it back a moment)
    for (let seen = 0; seen < 2; ) seen = (await reader.eventReadCommitted({ after: '', limit: 10 })).length;
    const second = await read(reader, first.cursor);
    return [...first.types, ...second.types];
  }

  it('a naive position > cursor reader skips the late-committing event', async () => {
    expect(await scenario(naive)).toEqual(['B']);
  });

  it('the committed-order reader sees both events', async () => {
    expect((await scenario(committed)).sort()).toEqual(['A', 'B']);
  });
});
