import { describe, expect, it } from 'vitest';
import type { Store } from './store.js';
import { task } from './conformance-rows.js';

/** The operations methods: statistics, deletion for retention, diagnosis. Part of `storeConformance`. */
export function maintenanceConformance(store: () => Store): void {
  describe('maintenance', () => {
    it('counts unfinished work per queue in one query, with the oldest due task and expired leases', async () => {
      const s = store();
      const now = await s.now();
      await s.taskEnqueue({
        tasks: [
          task('a', { id: 'a1', runAt: now - 5000 }),
          task('a', { id: 'a2' }),
          task('a', { id: 'a3', runAt: now + 60_000 }),
          task('b', { id: 'b1' }),
        ],
      });
      await s.taskClaim({ queue: 'b', limit: 1, leaseMs: 1, workerId: 'w', leaseToken: 'l1' });
      // finished tasks: one dead in c, two completed in c (neither is counted per queue but the dead)
      await s.taskEnqueue({ tasks: [task('c', { id: 'c1' }), task('c', { id: 'c2' }), task('c', { id: 'c3' })] });
      const [c1, c2, c3] = await s.taskClaim({
        queue: 'c',
        limit: 3,
        leaseMs: 60_000,
        workerId: 'w',
        leaseToken: 'lc',
      });
      await s.taskFail({ id: c1!.id, leaseToken: 'lc', error: 'x', retryDelayMs: null });
      await s.taskComplete({ items: [c2!, c3!].map((t) => ({ id: t.id, leaseToken: 'lc', result: null })) });
      await new Promise((resolve) => setTimeout(resolve, 20));
      const stats = await s.taskStats();
      expect(stats.map((q) => q.queue)).toEqual(['a', 'b', 'c']);
      expect(stats[0]).toMatchObject({
        queue: 'a',
        ready: 3,
        due: 2,
        running: 0,
        dead: 0,
        oldestDueAt: now - 5000,
        expiredLeases: 0,
      });
      expect(stats[1]).toMatchObject({
        queue: 'b',
        ready: 0,
        due: 0,
        running: 1,
        dead: 0,
        oldestDueAt: null,
        expiredLeases: 1,
      });
      expect(stats[2]).toMatchObject({
        queue: 'c',
        ready: 0,
        due: 0,
        running: 0,
        dead: 1,
        oldestDueAt: null,
        expiredLeases: 0,
      });
      expect((await s.status()).tasks).toEqual({ ready: 3, running: 1, completed: 2, dead: 1 });
    });

    it('lists the ordering keys that still have work', async () => {
      const s = store();
      await s.taskEnqueue({
        tasks: [task('q', { id: 'k1', orderingKey: 'run-1' }), task('q', { id: 'k2', orderingKey: 'run-2' })],
      });
      const [claimed] = await s.taskClaim({ queue: 'q', limit: 1, leaseMs: 60_000, workerId: 'w', leaseToken: 'l' });
      await s.taskComplete({ items: [{ id: claimed!.id, leaseToken: 'l', result: null }] });
      expect(await s.taskListActiveKeys({ queue: 'q', orderingKeys: ['run-1', 'run-2', 'run-3'] })).toEqual([
        claimed!.orderingKey === 'run-1' ? 'run-2' : 'run-1',
      ]);
      expect(await s.taskListActiveKeys({ queue: 'q', orderingKeys: [] })).toEqual([]);
    });

    it('deletes only finished tasks, oldest first, by state, queue and ordering keys', async () => {
      const k = store();
      await k.taskEnqueue({
        tasks: [task('keyed', { id: 'o1', orderingKey: 'a' }), task('keyed', { id: 'o2', orderingKey: 'b' })],
      });
      for (const leaseToken of ['la', 'lb']) {
        const [t] = await k.taskClaim({ queue: 'keyed', limit: 1, leaseMs: 60_000, workerId: 'w', leaseToken });
        await k.taskComplete({ items: [{ id: t!.id, leaseToken, result: null }] });
      }
      const later = (await k.now()) + 60_000;
      expect(
        await k.taskDelete({ states: ['completed'], updatedBefore: later, limit: 10, orderingKeys: ['b', 'c'] }),
      ).toEqual(['o2']);
      expect(await k.taskDelete({ states: ['completed'], updatedBefore: later, limit: 10, orderingKeys: [] })).toEqual(
        [],
      );
      await k.taskDelete({ states: ['completed'], updatedBefore: later, limit: 10, queue: 'keyed' });
      const s = store();
      await s.taskEnqueue({
        tasks: [task('q', { id: 'd1' }), task('q', { id: 'd2' }), task('other', { id: 'd3' }), task('q', { id: 'd4' })],
      });
      const claimed = await s.taskClaim({ queue: 'q', limit: 3, leaseMs: 60_000, workerId: 'w', leaseToken: 'l' });
      const [first, second, third] = claimed;
      await s.taskComplete({ items: [{ id: first!.id, leaseToken: 'l', result: 1 }] });
      await s.taskFail({ id: second!.id, leaseToken: 'l', error: 'x', retryDelayMs: null });
      // third stays running; d3 stays ready
      const far = (await s.now()) + 60_000;
      expect(await s.taskDelete({ states: ['completed'], updatedBefore: far, limit: 10, exceptQueue: 'q' })).toEqual(
        [],
      );
      expect(await s.taskDelete({ states: ['completed', 'dead'], updatedBefore: 0, limit: 10 })).toEqual([]);
      expect(await s.taskDelete({ states: ['completed'], updatedBefore: far, limit: 10 })).toEqual([first!.id]);
      expect(await s.taskDelete({ states: ['dead'], updatedBefore: far, limit: 10, queue: 'q' })).toEqual([second!.id]);
      const left = (await s.taskList({ limit: 10 })).map((t) => t.id).sort();
      expect(left).toEqual([third!.id, 'd3'].sort());
    });

    it('deletes whole streams with their idempotency keys, and readers and cursors go on across the gap', async () => {
      const s = store();
      await s.eventAppend({ appends: [{ streamId: 'keep', events: [{ type: 'A', data: 1 }] }] });
      await s.eventAppend({
        appends: [
          {
            streamId: 'gone',
            events: [
              { type: 'B', data: 2 },
              { type: 'C', data: 3 },
            ],
          },
        ],
        idempotencyKey: 'k-gone',
      });
      await s.eventAppend({ appends: [{ streamId: 'keep', events: [{ type: 'D', data: 4 }] }] });
      // on PostgreSQL a committed read may lag (older transactions anywhere in the cluster): poll
      const committed = async (after: string, count: number) => {
        const deadline = Date.now() + 10_000;
        for (;;) {
          const page = (await s.eventReadCommitted({ after, limit: 10 })).events;
          if (page.length >= count || Date.now() > deadline) return page;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      };
      const [first] = await committed('', 1);
      expect(await s.streamDelete({ streamIds: ['gone', 'never-was'] })).toEqual({ events: 2 });
      expect(await s.eventReadStream({ streamId: 'gone' })).toEqual([]);
      expect(await s.streamList({ prefix: 'gone', limit: 10 })).toEqual([]);
      const rest = await committed(first!.cursor, 1);
      expect(rest.map((e) => e.event.type)).toEqual(['D']);
      expect((await s.eventReadAll({})).map((e) => e.type)).toEqual(['A', 'D']);
      // the key is free again and the stream starts over
      const again = await s.eventAppend({
        appends: [{ streamId: 'gone', events: [{ type: 'E', data: 5 }] }],
        idempotencyKey: 'k-gone',
      });
      expect(again.duplicate).toBe(false);
      expect(again.events[0]?.version).toBe(1);
      await s.storageVacuum({ after: 'batch' });
      await s.storageVacuum({ after: 'sweep' });
    });

    it('deletes the oldest events of a stream, which goes on at its version', async () => {
      const s = store();
      await s.eventAppend({ appends: [{ streamId: 'chat', events: [{ type: 'M', data: 1 }] }], idempotencyKey: 'm1' });
      await s.eventAppend({
        appends: [
          {
            streamId: 'chat',
            events: [
              { type: 'M', data: 2 },
              { type: 'M', data: 3 },
            ],
          },
        ],
      });
      expect(await s.eventDeleteBefore({ streamId: 'chat', beforeVersion: 3 })).toEqual({ events: 2 });
      expect((await s.eventReadStream({ streamId: 'chat' })).map((e) => [e.version, e.data])).toEqual([[3, 3]]);
      const next = await s.eventAppend({
        appends: [{ streamId: 'chat', events: [{ type: 'M', data: 4 }] }],
        idempotencyKey: 'm1',
      });
      expect(next.duplicate).toBe(false);
      expect(next.events[0]?.version).toBe(4);
      expect(await s.eventDeleteBefore({ streamId: 'chat', beforeVersion: 1 })).toEqual({ events: 0 });
    });

    it('reports subscription lag in positions and parked counts', async () => {
      const s = store();
      await s.subscriptionEnsure({ name: 'late', streamPrefix: null, types: null, ordered: false, from: 'beginning' });
      for (let i = 0; i < 3; i++)
        await s.eventAppend({ appends: [{ streamId: `x-${i}`, events: [{ type: 'X', data: i }] }] });
      const [event] = await s.eventReadStream({ streamId: 'x-0' });
      await s.parkedAdd({ subscription: 'late', event: event!, error: 'boom', attempts: 1 });
      expect(await s.subscriptionStats()).toEqual([
        { name: 'late', behind: 3, parked: 1, blocked: false, leaseExpired: false },
      ]);
    });

    it('diagnoses latency, migrations and clock skew', async () => {
      const d = await store().storageDiagnose({ sampleMs: 50 });
      expect(d.latencyMs).toBeGreaterThanOrEqual(0);
      expect(d.migrations).toContain(1);
      expect(d.migrations).toContain(60);
      expect(Math.abs(d.clockSkewMs)).toBeLessThan(5000);
    });
  });
}
