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

    it('locks a key, counting its versions from 1, with its state; a rolled back lock counts nothing', async () => {
      const s = h.store();
      const lock = async (store: typeof s, slot: string) => {
        const [one] = await store.slotLock({ slots: [slot], projection: 'slot-states' });
        expect(one!.slot).toBe(slot);
        return { version: one!.version, value: one!.value };
      };
      expect(await lock(s, 'lk')).toEqual({ version: 1, value: undefined });
      await s.projectionPut({ name: 'slot-states', key: 'lk', value: { held: ['a'], version: 1 } });
      expect(await lock(s, 'lk')).toEqual({ version: 2, value: { held: ['a'], version: 1 } });
      expect(await lock(s, 'other-lk')).toEqual({ version: 1, value: undefined });
      await expect(
        s.transaction(async (tx) => {
          expect((await lock(tx, 'lk')).version).toBe(3);
          throw new Error('undo');
        }),
      ).rejects.toThrow('undo');
      // the state this transaction wrote before its lock is the one the lock reads
      const locked = await s.transaction(async (tx) => {
        await tx.projectionPut({ name: 'slot-states', key: 'lk', value: { held: [], version: 2 } });
        return lock(tx, 'lk');
      });
      expect(locked).toEqual({ version: 3, value: { held: [], version: 2 } });
      // several keys in one statement, a new one made at 1
      const many = await s.slotLock({ slots: ['new-lk', 'lk', 'other-lk'], projection: 'slot-states' });
      expect(many).toHaveLength(3);
      expect(many).toEqual(
        expect.arrayContaining([
          { slot: 'new-lk', version: 1, value: undefined },
          { slot: 'lk', version: 4, value: { held: [], version: 2 } },
          { slot: 'other-lk', version: 2, value: undefined },
        ]),
      );
    });
  });
}
