import { describe, expect, it } from 'vitest';
import type { Store } from './store.js';

/** Named rate limits and their buckets (`conformance.ts` sets up the store; `openAnother`: another process). */
export function rateConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  describe('rate limits', () => {
    it('defines, changes, lists and deletes limits', async () => {
      const s = h.store();
      const made = await s.rateLimitPut({ name: 'openai', limit: 100, periodMs: 60_000, key: null });
      expect(made).toMatchObject({ name: 'openai', limit: 100, periodMs: 60_000, key: null });
      const changed = await s.rateLimitPut({ name: 'openai', limit: 5, periodMs: 1_000, key: 'input.user' });
      expect(changed).toMatchObject({ limit: 5, periodMs: 1_000, key: 'input.user', createdAt: made.createdAt });
      await s.rateLimitPut({ name: 'b', limit: 1, periodMs: 1_000, key: null });
      expect((await s.rateLimitList()).map((l) => l.name)).toEqual(['b', 'openai']);
      expect(await s.rateLimitGet({ name: 'openai' })).toMatchObject({ limit: 5 });
      expect(await s.rateLimitDelete({ name: 'openai' })).toBe(true);
      expect(await s.rateLimitDelete({ name: 'openai' })).toBe(false);
      expect(await s.rateLimitGet({ name: 'openai' })).toBeUndefined();
    });

    it('allows a burst of the limit, then tells the next taker when there is room', async () => {
      const s = h.store();
      await s.rateLimitPut({ name: 'api', limit: 3, periodMs: 60_000, key: null });
      const before = await s.now();
      for (let i = 0; i < 3; i++)
        expect(await s.rateTake({ uses: [{ name: 'api', key: '', units: 1 }] })).toEqual({ ok: true });
      const over = await s.rateTake({ uses: [{ name: 'api', key: '', units: 1 }] });
      expect(over).toMatchObject({ ok: false, name: 'api', key: '' });
      // one unit comes back every 20 s
      const retryAt = (over as { retryAt: number }).retryAt;
      expect(retryAt).toBeGreaterThanOrEqual(before + 20_000);
      expect(retryAt).toBeLessThanOrEqual((await s.now()) + 20_000);
      // another key is another bucket
      expect(await s.rateTake({ uses: [{ name: 'api', key: 'u2', units: 3 }] })).toEqual({ ok: true });
    });

    it('counts units, takes all limits or none, and refuses what can never fit', async () => {
      const s = h.store();
      await s.rateLimitPut({ name: 'tokens', limit: 10, periodMs: 60_000, key: null });
      await s.rateLimitPut({ name: 'calls', limit: 1, periodMs: 60_000, key: null });
      expect(await s.rateTake({ uses: [{ name: 'tokens', key: '', units: 7 }] })).toEqual({ ok: true });
      const both = await s.rateTake({
        uses: [
          { name: 'calls', key: '', units: 1 },
          { name: 'tokens', key: '', units: 4 },
        ],
      });
      expect(both).toMatchObject({ ok: false, name: 'tokens' });
      // the refused take charged nothing: calls still has its one unit, tokens its three
      expect(await s.rateTake({ uses: [{ name: 'calls', key: '', units: 1 }] })).toEqual({ ok: true });
      expect(await s.rateTake({ uses: [{ name: 'tokens', key: '', units: 3 }] })).toEqual({ ok: true });
      expect(await s.rateTake({ uses: [{ name: 'tokens', key: '', units: 11 }] })).toMatchObject({
        ok: false,
        retryAt: null,
        refused: expect.stringContaining('more than'),
      });
      expect(await s.rateTake({ uses: [{ name: 'nope', key: '', units: 1 }] })).toMatchObject({
        ok: false,
        retryAt: null,
        refused: "no rate limit named 'nope'",
      });
    });

    it('answers a take asked again under its id as the first time, charging once', async () => {
      const s = h.store();
      await s.rateLimitPut({ name: 'one', limit: 1, periodMs: 60_000, key: null });
      const use = { name: 'one', key: '', units: 1 };
      expect(await s.rateTake({ takeId: 'run-1:1#1:1', uses: [use] })).toEqual({ ok: true });
      expect(await s.rateTake({ takeId: 'run-1:1#1:1', uses: [use] })).toEqual({ ok: true });
      const waiting = await s.rateTake({ takeId: 'run-2:1#1:1', uses: [use] });
      expect(waiting).toMatchObject({ ok: false, name: 'one' });
      expect(await s.rateTake({ takeId: 'run-2:1#1:1', uses: [use] })).toEqual(waiting);
    });

    it('defers the next free slot and charges units after the fact', async () => {
      const s = h.store();
      await s.rateLimitPut({ name: 'd', limit: 10, periodMs: 10_000, key: null });
      const until = (await s.now()) + 30_000;
      await s.rateDefer({ name: 'd', key: 'k', until });
      const told = await s.rateTake({ uses: [{ name: 'd', key: 'k', units: 1 }] });
      expect(told).toMatchObject({ ok: false });
      expect(Math.abs((told as { retryAt: number }).retryAt - until)).toBeLessThanOrEqual(1);
      // charged past its room: the next take waits for the units used
      await s.rateCharge({ name: 'd', key: 'c', units: 15 });
      const after = await s.rateTake({ uses: [{ name: 'd', key: 'c', units: 1 }] });
      expect((after as { retryAt: number }).retryAt).toBeGreaterThan((await s.now()) + 5_000);
      await s.rateDefer({ name: 'missing', key: '', until });
      await s.rateCharge({ name: 'missing', key: '', units: 1 });
    });

    it('never lets concurrent takers from several processes past the limit', async () => {
      await h.store().rateLimitPut({ name: 'shared', limit: 25, periodMs: 600_000, key: null });
      const stores = [h.store(), await h.openAnother(), await h.openAnother()];
      const results = await Promise.all(
        Array.from({ length: 90 }, (_, i) =>
          stores[i % 3]!.transaction((tx) =>
            tx.rateTake({ takeId: `t${i}`, uses: [{ name: 'shared', key: '', units: 1 }] }),
          ),
        ),
      );
      expect(results.filter((r) => r.ok)).toHaveLength(25);
    });
  });
}
