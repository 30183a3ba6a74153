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
  const read = await store.eventReadCommitted({ after, limit: 100 });
  return { types: read.events.map((e) => e.event.type), cursor: read.cursor };
};

/**
 * Readers that want only A. B does not match, and a reader moves its cursor past what it scanned:
 * by position (naive), B's position passes A's for good; in committed order it must not.
 */
const naivePastUnmatched: Reader = async (store, after) => {
  const all = await store.eventReadAll({ fromPosition: Number(after || 0) + 1 });
  return { types: all.filter((e) => e.type === 'A').map((e) => e.type), cursor: String(all.at(-1)?.position ?? after) };
};

describe('commit order on postgres', () => {
  let writerA: Store;
  let writerB: Store;
  let reader: Store;
  beforeEach(async () => {
    const url = await createPostgresDatabase();
    [writerA, writerB, reader] = await Promise.all([
      openPostgresStore(url),
      openPostgresStore(url),
      openPostgresStore(url),
    ]);
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
      const [b] = (await writerB.eventAppend({ appends: [{ streamId: 'b', events: [{ type: 'B', data: {} }] }] }))
        .events;
      expect((await reader.eventReadAll({})).map((e) => [e.type, e.position])).toEqual([['B', b!.position]]);
      expect(b!.position).toBeGreaterThan(1);
      first = await read(reader, '');
    } finally {
      release();
      await a;
    }
    // wait until both events are past every reader's horizon (other databases' transactions hold it back a moment)
    for (let seen = 0; seen < 2; ) seen = (await reader.eventReadCommitted({ after: '', limit: 10 })).events.length;
    const second = await read(reader, first.cursor);
    return [...first.types, ...second.types];
  }

  it('a naive position > cursor reader skips the late-committing event', async () => {
    expect(await scenario(naive)).toEqual(['B']);
  });

  it('the committed-order reader sees both events', async () => {
    expect((await scenario(committed)).sort()).toEqual(['A', 'B']);
  });

  it('a naive reader that moves past the unmatched events it scanned loses the late-committing match', async () => {
    expect(await scenario(naivePastUnmatched)).toEqual([]);
  });

  it.each([{ types: ['A'] }, { streamPrefix: 'a' }, { streamPrefix: 'a', types: ['A', 'C'] }])(
    'a reader filtered by %j moves past unmatched events, but never past a match that commits late',
    async (filter) => {
      await writerB.eventAppend({ appends: [{ streamId: 'c', events: [{ type: 'C', data: {} }] }] });
      for (let seen = 0; seen < 1; ) seen = (await reader.eventReadCommitted({ after: '', limit: 10 })).events.length;
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
      let first: Awaited<ReturnType<typeof reader.eventReadCommitted>>;
      try {
        await writerB.eventAppend({ appends: [{ streamId: 'b', events: [{ type: 'B', data: {} }] }] });
        first = await reader.eventReadCommitted({ after: '', limit: 100, ...filter });
      } finally {
        release();
        await a;
      }
      expect(first.events).toEqual([]);
      // past C, which committed before A's transaction began
      expect(first.cursor).not.toBe('');
      let second = await reader.eventReadCommitted({ after: first.cursor, limit: 100, ...filter });
      while (second.events.length === 0)
        second = await reader.eventReadCommitted({ after: first.cursor, limit: 100, ...filter });
      expect(second.events.map((e) => e.event.type)).toEqual(['A']);
      // and once every event is below the horizon, past B too: the read reaches the head (the newest committed event)
      const head = await reader.eventHead();
      expect(head.split(':')[1]).toBe(String(Math.max(...(await reader.eventReadAll({})).map((e) => e.position))));
      let third = await reader.eventReadCommitted({ after: second.cursor, limit: 100, ...filter });
      while (third.cursor !== head)
        third = await reader.eventReadCommitted({ after: second.cursor, limit: 100, ...filter });
      expect(third.events).toEqual([]);
    },
  );
});
