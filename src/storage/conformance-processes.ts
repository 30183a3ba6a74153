import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { task } from './conformance-rows.js';
import { leaseHolderPrefix } from './processes.js';
import type { Store } from './store.js';

/** Processes and the leases they hold (`conformance.ts` sets up the store). */
export function processConformance(h: { store: () => Store }): void {
  const proc = (id: string) => ({ id, host: 'host-a', pid: 4242, pidStart: '99' });

  describe('processes', () => {
    it('records, renews and lists processes', async () => {
      await h.store().processRegister(proc('p1'));
      const [first] = await h.store().processList();
      expect(first).toMatchObject({ id: 'p1', host: 'host-a', pid: 4242, pidStart: '99' });
      await sleep(20);
      expect(await h.store().processHeartbeat({ id: 'p1' })).toBe(true);
      expect((await h.store().processList())[0]!.heartbeatAt).toBeGreaterThan(first!.heartbeatAt);
      expect(await h.store().processHeartbeat({ id: 'missing' })).toBe(false);
    });

    it("ends a dead process's leases at once, keeps the living's, and still fences its lease tokens", async () => {
      const s = h.store();
      await s.processRegister(proc('dead'));
      await s.processRegister(proc('live'));
      await s.taskEnqueue({ tasks: [task('q', { id: 't-dead' }), task('q', { id: 't-live' })] });
      await s.taskClaim({
        queue: 'q',
        limit: 1,
        leaseMs: 60_000,
        workerId: `${leaseHolderPrefix('dead')}w1`,
        leaseToken: 'L-dead',
      });
      await s.taskClaim({
        queue: 'q',
        limit: 1,
        leaseMs: 60_000,
        workerId: `${leaseHolderPrefix('live')}w2`,
        leaseToken: 'L-live',
      });
      await s.subscriptionEnsure({ name: 'sub', streamPrefix: null, types: null, ordered: false, from: 'beginning' });
      expect(
        await s.subscriptionLease({ name: 'sub', owner: `${leaseHolderPrefix('dead')}o1`, ttlMs: 60_000 }),
      ).not.toBeNull();
      // a 60 s lease is not expired
      expect(await s.taskExpire({ limit: 10 })).toEqual([]);
      expect(await s.subscriptionLease({ name: 'sub', owner: 'other', ttlMs: 60_000 })).toBeNull();

      const ended = await s.processExpire({ processes: [{ id: 'dead', heartbeatAt: null }] });
      expect(ended).toEqual({ processes: ['dead'], tasks: 1, subscriptions: 1 });
      expect((await s.processList()).map((p) => p.id)).toEqual(['live']);
      const expired = await s.taskExpire({ limit: 10 });
      expect(expired.map((t) => [t.id, t.state])).toEqual([['t-dead', 'ready']]);
      expect((await s.taskGet({ id: 't-live' })).state).toBe('running');
      expect(await s.subscriptionLease({ name: 'sub', owner: 'other', ttlMs: 60_000 })).toMatchObject({
        owner: 'other',
      });
      // the dead process, only paused, wakes: its token no longer completes the task
      const [again] = await s.taskClaim({ queue: 'q', limit: 1, leaseMs: 60_000, workerId: 'w3', leaseToken: 'L-new' });
      expect(again?.id).toBe('t-dead');
      expect(await s.taskComplete({ items: [{ id: 't-dead', leaseToken: 'L-dead', result: null }] })).toEqual([]);
      expect(await s.processHeartbeat({ id: 'dead' })).toBe(false);
    });

    it('ends a process only while its heartbeat is the one it was judged dead by', async () => {
      const s = h.store();
      await s.processRegister(proc('slow'));
      const [seen] = await s.processList();
      await sleep(20);
      expect(await s.processHeartbeat({ id: 'slow' })).toBe(true);
      // it beat since: it stays
      expect(await s.processExpire({ processes: [{ id: 'slow', heartbeatAt: seen!.heartbeatAt }] })).toEqual({
        processes: [],
        tasks: 0,
        subscriptions: 0,
      });
      const [now] = await s.processList();
      expect(
        (
          await s.processExpire({
            processes: [
              { id: 'slow', heartbeatAt: now!.heartbeatAt },
              { id: 'unknown', heartbeatAt: null },
            ],
          })
        ).processes,
      ).toEqual(['slow']);
      expect(await s.processList()).toEqual([]);
    });
  });
}
