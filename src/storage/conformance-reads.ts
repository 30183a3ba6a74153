import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { CommittedRead, Cursor, Store } from './store.js';

/**
 * Reads that filter (`conformance.ts` sets up the store): `readAll` by types, prefix and position;
 * committed reads, where a reader moves past the events
 * its filters do not match, so a subscription waiting for an event type nobody appends yet does not
 * read the journal from its start on every wake-up, and one read examines a bounded number of events.
 */
export function readConformance(h: { store: () => Store }): void {
  const ev = (type: string) => ({ type, data: {} });
  let last = 0;
  const append = async (appends: Array<{ streamId: string; events: Array<{ type: string; data: unknown }> }>) => {
    const result = await h.store().eventAppend({ appends });
    last = result.events.at(-1)!.position;
  };
  /** Reads until the reader is past every committed event (on PostgreSQL the horizon may lag a moment). */
  const readToHead = async (
    after: Cursor,
    filter: { streamPrefix?: string; types?: string[] },
    limit = 100,
  ): Promise<{ reads: CommittedRead[]; cursor: Cursor }> => {
    const reads: CommittedRead[] = [];
    const head = await settledHead(h.store(), last);
    let cursor = after;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      const read = await h.store().eventReadCommitted({ after: cursor, limit, ...filter });
      reads.push(read);
      cursor = read.cursor;
      if (!read.more && cursor === head) break;
      if (!read.more) await sleep(5);
    }
    return { reads, cursor };
  };

  describe('readAll', () => {
    it('filters readAll by stream prefix and types, from a position', async () => {
      await h
        .store()
        .eventAppend({ appends: [{ streamId: 'task:1', events: [ev('task.enqueued'), ev('task.claimed')] }] });
      await h.store().eventAppend({ appends: [{ streamId: 'chan:1', events: [ev('message')] }] });
      await h.store().eventAppend({ appends: [{ streamId: 'task:2', events: [ev('task.enqueued')] }] });
      const all = await h.store().eventReadAll({});
      expect(all.map((e) => e.type)).toEqual(['task.enqueued', 'task.claimed', 'message', 'task.enqueued']);
      expect((await h.store().eventReadAll({ streamPrefix: 'task:' })).map((e) => e.streamId)).toEqual([
        'task:1',
        'task:1',
        'task:2',
      ]);
      expect((await h.store().eventReadAll({ types: ['task.enqueued'] })).map((e) => e.streamId)).toEqual([
        'task:1',
        'task:2',
      ]);
      expect((await h.store().eventReadAll({ fromPosition: all[2]!.position })).map((e) => e.type)).toEqual([
        'message',
        'task.enqueued',
      ]);
      expect((await h.store().eventReadAll({ streamPrefix: 'task:', limit: 1 })).length).toBe(1);
      expect(await h.store().eventReadAll({ streamPrefix: 'ta%' })).toEqual([]);
    });

    it('reads several types of readAll merged in position order, from a position, within a prefix and a limit', async () => {
      const order = ['job.done', 'task.completed', 'job.failed', 'job.done', 'x.other', 'job.failed', 'job.done'];
      for (const [i, type] of order.entries())
        await h.store().eventAppend({ appends: [{ streamId: i === 3 ? 'job:c' : `run:r${i}`, events: [ev(type)] }] });
      const read = async (p: { types: string[]; fromPosition?: number; limit?: number; streamPrefix?: string }) =>
        (await h.store().eventReadAll(p)).map((e) => `${e.streamId} ${e.type}`);
      const ends = ['job.failed', 'job.done', 'job.failed'];
      expect(await read({ types: ends })).toEqual([
        'run:r0 job.done',
        'run:r2 job.failed',
        'job:c job.done',
        'run:r5 job.failed',
        'run:r6 job.done',
      ]);
      expect(await read({ types: ends, limit: 2 })).toEqual(['run:r0 job.done', 'run:r2 job.failed']);
      const third = (await h.store().eventReadAll({}))[3]!.position;
      expect(await read({ types: ends, fromPosition: third, streamPrefix: 'run:' })).toEqual([
        'run:r5 job.failed',
        'run:r6 job.done',
      ]);
      expect(await read({ types: ['job.done', 'task.completed'], limit: 3 })).toEqual([
        'run:r0 job.done',
        'run:r1 task.completed',
        'job:c job.done',
      ]);
      expect(await read({ types: [] })).toEqual([]);
    });
  });

  describe('committed reads that filter', () => {
    it('move the cursor past unmatched events, by type, by stream prefix, or both', async () => {
      await append([{ streamId: 'noise-1', events: Array.from({ length: 50 }, () => ev('noise')) }]);
      await append([{ streamId: 'chan:1', events: [ev('other')] }]);
      const head = await settledHead(h.store(), last);
      // task.wanted: a type the type indexes leave out, found by examining events in order
      for (const filter of [
        { types: ['wanted'] },
        { types: ['task.wanted'] },
        { streamPrefix: 'chan:' },
        { streamPrefix: 'chan:', types: ['wanted', 'also'] },
      ]) {
        const { reads, cursor } = await readToHead('', filter);
        expect(reads.flatMap((r) => r.events)).toEqual(
          filter.types ? [] : [expect.objectContaining({ event: expect.objectContaining({ type: 'other' }) })],
        );
        expect(cursor).toBe(head);
        // a second read from there finds nothing and stays put
        expect(await h.store().eventReadCommitted({ after: cursor, limit: 100, ...filter })).toEqual({
          events: [],
          cursor,
          more: false,
        });
      }
      await append([
        { streamId: 'chan:2', events: [ev('wanted')] },
        { streamId: 'noise-2', events: [ev('wanted')] },
      ]);
      const { reads } = await readToHead(head, { streamPrefix: 'chan:', types: ['wanted'] });
      expect(reads.flatMap((r) => r.events.map((e) => e.event.streamId))).toEqual(['chan:2']);
      const scanned = await readToHead(head, { streamPrefix: 'chan:', types: ['task.wanted', 'wanted'] });
      expect(scanned.reads.flatMap((r) => r.events.map((e) => e.event.streamId))).toEqual(['chan:2']);
    });

    it('return at most `limit` events with the last one as the cursor, and say there is more', async () => {
      await append([{ streamId: 'm', events: [ev('a'), ev('b'), ev('a'), ev('a')] }]);
      await settledHead(h.store(), last);
      const first = await h.store().eventReadCommitted({ after: '', limit: 2, types: ['a'] });
      expect(first.events.map((e) => e.event.version)).toEqual([1, 3]);
      expect(first).toMatchObject({ cursor: first.events[1]!.cursor, more: true });
      const rest = await h.store().eventReadCommitted({ after: first.cursor, limit: 2, types: ['a', 'a'] });
      expect(rest.events.map((e) => e.event.version)).toEqual([4]);
      expect(rest.more).toBe(false);
    });

    it('examine a bounded number of events per read, however many do not match', async () => {
      const noise = 25_000;
      for (let i = 0; i < noise; i += 5_000)
        await append([{ streamId: `bulk-${i}`, events: Array.from({ length: 5_000 }, () => ev('noise')) }]);
      await append([{ streamId: 'chan:x', events: [ev('late')] }]);
      const { reads } = await readToHead('', { streamPrefix: 'chan:' }, 10);
      expect(reads.flatMap((r) => r.events.map((e) => e.event.type))).toEqual(['late']);
      // more than one read, each moving the cursor forward
      expect(reads.filter((r) => r.more).length).toBeGreaterThanOrEqual(2);
      const byType = await readToHead('', { types: ['late'] });
      expect(byType.reads.flatMap((r) => r.events.map((e) => e.event.type))).toEqual(['late']);
      expect(byType.reads[0]!.more).toBe(false);
      // a type the engine writes by the thousand (the type indexes leave step.* and task.* out): found all the same
      await append([{ streamId: 'task:x', events: [ev('task.late')] }]);
      const engineType = await readToHead('', { types: ['task.late', 'late'] }, 10);
      expect(engineType.reads.flatMap((r) => r.events.map((e) => e.event.type))).toEqual(['late', 'task.late']);
    });

    it('append more events than one statement takes: versions gapless per stream, positions in the order sent', async () => {
      const events = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ev(`${tag}${i}`));
      const result = await h.store().eventAppend({
        appends: [
          { streamId: 'many-a', events: events(150, 'a') },
          { streamId: 'many-b', events: events(3, 'b') },
          { streamId: 'many-a', events: events(70, 'c') },
        ],
      });
      expect(result.events.map((e) => e.type)).toEqual(
        [...events(150, 'a'), ...events(3, 'b'), ...events(70, 'c')].map((e) => e.type),
      );
      expect(result.events.every((e, i) => i === 0 || e.position > result.events[i - 1]!.position)).toBe(true);
      const a = await h.store().eventReadStream({ streamId: 'many-a' });
      expect(a.map((e) => e.version)).toEqual(Array.from({ length: 220 }, (_, i) => i + 1));
      expect(a.map((e) => e.position)).toEqual(
        result.events.filter((e) => e.streamId === 'many-a').map((e) => e.position),
      );
    });

    it('refuses a cursor of another form', async () => {
      await expect(h.store().eventReadCommitted({ after: 'x', limit: 1 })).rejects.toThrow(/not a cursor/);
    });
  });
}

/**
 * The head once `position` (the last event appended, by sequential appends) is readable: on
 * PostgreSQL the committed-order horizon may lag a commit for a moment.
 */
async function settledHead(store: Store, position: number): Promise<Cursor> {
  for (const deadline = Date.now() + 10_000; ; await sleep(5)) {
    const head = await store.eventHead();
    if (Date.now() > deadline) return head;
    if (head !== String(position) && !head.endsWith(`:${position}`)) continue;
    // the head names the newest committed event; a committed read reaches it once no older transaction is open (PostgreSQL)
    const before = head.includes(':')
      ? head.replace(/:(\d+)$/, (_, p: string) => `:${Number(p) - 1}`)
      : String(position - 1);
    if ((await store.eventReadCommitted({ after: before, limit: 1 })).events.length > 0) return head;
  }
}
