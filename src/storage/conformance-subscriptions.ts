import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { LeaseLostError, NotFoundError } from '../errors.js';
import { readCommitted } from './conformance-journal.js';
import type { Store } from './store.js';

const ev = (type: string, data: unknown = {}) => ({ type, data });

/** Subscriptions: a cursor each, leased to one owner, blocked and unblocked, and their parked events (`conformance.ts` sets up the store). */
export function subscriptionConformance(h: { store: () => Store }): void {
  describe('subscriptions', () => {
    it('creates once and keeps the cursor on a second ensure', async () => {
      const sub = await h.store().subscriptionEnsure({
        name: 's',
        streamPrefix: 'chan:',
        types: ['message'],
        ordered: true,
        from: 'beginning',
      });
      expect(sub).toMatchObject({
        name: 's',
        cursor: '',
        streamPrefix: 'chan:',
        types: ['message'],
        ordered: true,
        blockedReason: null,
      });
      await h.store().subscriptionLease({ name: 's', owner: 'w1', ttlMs: 10_000 });
      await h.store().subscriptionAdvance({ name: 's', owner: 'w1', cursor: 'c-1' });
      const again = await h.store().subscriptionEnsure({
        name: 's',
        streamPrefix: null,
        types: null,
        ordered: false,
        from: 'beginning',
      });
      expect(again.cursor).toBe('c-1');
      expect((await h.store().subscriptionList()).map((s) => s.name)).toEqual(['s']);
      await expect(h.store().subscriptionGet({ name: 'missing' })).rejects.toThrow(NotFoundError);
    });

    it('starts at the head when asked to start from the end', async () => {
      await h.store().eventAppend({ appends: [{ streamId: 'a', events: [ev('Old')] }] });
      await readCommitted(h.store(), 1);
      const sub = await h.store().subscriptionEnsure({
        name: 'late',
        streamPrefix: null,
        types: null,
        ordered: false,
        from: 'end',
      });
      await h.store().eventAppend({ appends: [{ streamId: 'a', events: [ev('New')] }] });
      expect((await readCommitted(h.store(), 1, sub.cursor)).events.map((e) => e.type)).toEqual(['New']);
    });

    it('leases to one owner at a time and fences cursor advances', async () => {
      await h
        .store()
        .subscriptionEnsure({ name: 's', streamPrefix: null, types: null, ordered: false, from: 'beginning' });
      expect(await h.store().subscriptionLease({ name: 's', owner: 'w1', ttlMs: 150 })).toMatchObject({ owner: 'w1' });
      expect(await h.store().subscriptionLease({ name: 's', owner: 'w2', ttlMs: 150 })).toBeNull();
      expect(await h.store().subscriptionLease({ name: 's', owner: 'w1', ttlMs: 150 })).toMatchObject({ owner: 'w1' });
      await expect(h.store().subscriptionAdvance({ name: 's', owner: 'w2', cursor: 'x' })).rejects.toThrow(
        LeaseLostError,
      );
      await sleep(250);
      expect(await h.store().subscriptionLease({ name: 's', owner: 'w2', ttlMs: 10_000 })).toMatchObject({
        owner: 'w2',
      });
      await expect(h.store().subscriptionAdvance({ name: 's', owner: 'w1', cursor: 'x' })).rejects.toThrow(
        LeaseLostError,
      );
      await h.store().subscriptionRelease({ name: 's', owner: 'w2' });
      expect(await h.store().subscriptionLease({ name: 's', owner: 'w3', ttlMs: 10_000 })).toMatchObject({
        owner: 'w3',
      });
      await expect(h.store().subscriptionLease({ name: 'missing', owner: 'w1', ttlMs: 1 })).rejects.toThrow(
        NotFoundError,
      );
    });

    it('blocks and unblocks, and keeps parked events with their status', async () => {
      await h
        .store()
        .subscriptionEnsure({ name: 's', streamPrefix: null, types: null, ordered: true, from: 'beginning' });
      expect((await h.store().subscriptionBlock({ name: 's', blockedReason: 'handler failed' })).blockedReason).toBe(
        'handler failed',
      );
      expect((await h.store().subscriptionBlock({ name: 's', blockedReason: null })).blockedReason).toBeNull();
      const [event] = (await h.store().eventAppend({ appends: [{ streamId: 'a', events: [ev('Bad', { n: 1 })] }] }))
        .events;
      await h.store().parkedAdd({ subscription: 's', event: event!, error: 'Error: nope', attempts: 5 });
      const [parked] = await h.store().parkedList({ subscription: 's' });
      expect(parked).toMatchObject({
        subscription: 's',
        position: event!.position,
        error: 'Error: nope',
        attempts: 5,
        status: 'parked',
      });
      expect(parked?.event).toEqual(event);
      const retry = await h.store().parkedSetStatus({ subscription: 's', position: event!.position, status: 'retry' });
      expect(retry.status).toBe('retry');
      expect(await h.store().parkedList({ subscription: 's', status: 'parked' })).toEqual([]);
      expect(await h.store().parkedList({ subscription: 's', status: 'retry' })).toHaveLength(1);
      await expect(
        h.store().parkedSetStatus({ subscription: 's', position: 999_999, status: 'skipped' }),
      ).rejects.toThrow(NotFoundError);
    });
  });
}
