import { describe, expect, it } from 'vitest';
import type { Store } from './store.js';

/** The lines of keyed concurrency limits (`conformance.ts` sets up the store). */
export function slotConformance(h: { store: () => Store }): void {
  describe('slot waiters', () => {
    it('keeps a line by priority then place, by group on demand, and takes runs out of it', async () => {
      const s = h.store();
      const add = (runId: string, priority: number, seq: number, group: string | null) =>
        s.slotWaiterAdd({ slot: 'k', runId, priority, seq, group, data: { rest: [], n: runId } });
      await add('a', 0, 1, 'g1');
      await add('b', 0, 2, 'g2');
      await add('c', 5, 3, 'g1');
      await add('d', 0, 0.5, null);
      await s.slotWaiterAdd({ slot: 'other', runId: 'x', priority: 9, seq: 1, group: null, data: null });
      // a run already in line keeps its row
      await add('a', 9, 99, 'g9');
      const ids = async (p: Parameters<Store['slotWaiterList']>[0]) => (await s.slotWaiterList(p)).map((w) => w.runId);
      expect(await ids({ slot: 'k', limit: 10 })).toEqual(['c', 'd', 'a', 'b']);
      expect(await ids({ slot: 'k', limit: 2 })).toEqual(['c', 'd']);
      expect(await ids({ slot: 'k', group: 'g1', limit: 10 })).toEqual(['c', 'a']);
      expect(await ids({ slot: 'k', group: null, limit: 10 })).toEqual(['d']);
      const [first] = await s.slotWaiterList({ slot: 'k', group: 'g1', limit: 1 });
      expect(first).toEqual({ slot: 'k', runId: 'c', priority: 5, seq: 3, group: 'g1', data: { rest: [], n: 'c' } });
      const gone = await s.slotWaiterDelete({ slot: 'k', runIds: ['a', 'zz', 'x'] });
      expect(gone.map((w) => [w.runId, w.group, w.seq])).toEqual([['a', 'g1', 1]]);
      expect(await s.slotWaiterDelete({ slot: 'k', runIds: [] })).toEqual([]);
      expect(await ids({ slot: 'k', limit: 10 })).toEqual(['c', 'd', 'b']);
      expect(await ids({ slot: 'other', limit: 10 })).toEqual(['x']);
      // in a transaction that rolls back, nothing changes
      await expect(
        s.transaction(async (tx) => {
          await tx.slotWaiterDelete({ slot: 'k', runIds: ['c'] });
          await tx.slotWaiterAdd({ slot: 'k', runId: 'e', priority: 0, seq: 7, group: null, data: {} });
          expect((await tx.slotWaiterList({ slot: 'k', limit: 10 })).map((w) => w.runId)).toEqual(['d', 'b', 'e']);
          throw new Error('undo');
        }),
      ).rejects.toThrow('undo');
      expect(await ids({ slot: 'k', limit: 10 })).toEqual(['c', 'd', 'b']);
    });

    it("locks keys with their states; a state written is the next lock's, and a rolled back one is gone", async () => {
      const s = h.store();
      expect(await s.slotLock({ slots: ['lk'] })).toEqual([{ slot: 'lk', state: undefined }]);
      expect(await s.slotGet({ slots: ['lk'] })).toEqual([]);
      await s.transaction(async (tx) => {
        await tx.slotLock({ slots: ['lk'] });
        await tx.slotPut({ slot: 'lk', state: { held: ['a'] } });
        // held until the next statement (PostgreSQL) or a read of keys (SQLite), which sees it
        expect(await tx.slotGet({ slots: ['lk'] })).toEqual([{ slot: 'lk', state: { held: ['a'] } }]);
        await tx.slotPut({ slot: 'lk', state: { held: ['a', 'b'] } });
        await tx.slotPut({ slot: 'lk', state: { held: ['a'] } });
      });
      expect(await s.slotLock({ slots: ['lk'] })).toEqual([{ slot: 'lk', state: { held: ['a'] } }]);
      await expect(
        s.transaction(async (tx) => {
          await tx.slotLock({ slots: ['lk'] });
          await tx.slotPut({ slot: 'lk', state: { held: [] } });
          throw new Error('undo');
        }),
      ).rejects.toThrow('undo');
      // several keys in one statement, a new one made with no state
      const many = await s.slotLock({ slots: ['new-lk', 'lk', 'other-lk'] });
      expect(many).toHaveLength(3);
      expect(many).toEqual(
        expect.arrayContaining([
          { slot: 'new-lk', state: undefined },
          { slot: 'lk', state: { held: ['a'] } },
          { slot: 'other-lk', state: undefined },
        ]),
      );
      await s.slotPut({ slot: 'other-lk', state: { held: ['b'] } });
      expect(await s.slotList({ limit: 10 })).toEqual([
        { slot: 'lk', state: { held: ['a'] } },
        { slot: 'other-lk', state: { held: ['b'] } },
      ]);
      expect(await s.slotList({ after: 'lk', limit: 10 })).toEqual([{ slot: 'other-lk', state: { held: ['b'] } }]);
    });

    it('makes a second locker wait for the first and answers the state the first committed', async () => {
      const s = h.store();
      await s.slotPut({ slot: 'race', state: { n: 0 } });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const first = s.transaction(async (tx) => {
        await tx.slotLock({ slots: ['race'] });
        await held;
        await tx.slotPut({ slot: 'race', state: { n: 1 } });
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = s.transaction(async (tx) => (await tx.slotLock({ slots: ['race'] }))[0]!.state);
      await new Promise((resolve) => setTimeout(resolve, 100));
      release();
      await first;
      expect(await second).toEqual({ n: 1 });
    });
  });
}
