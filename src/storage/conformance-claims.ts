import { describe, expect, it } from 'vitest';
import { task } from './conformance-rows.js';
import type { Store } from './store.js';

/** Tasks claimed as they are inserted (`NewTask.claim`, `TaskClaim`); `conformance.ts` sets up the store. */
export function insertClaimConformance(h: { store: () => Store }): void {
  describe('tasks claimed as they are inserted', () => {
    it('claims each task it creates as it inserts it, for the worker given, unless its queue is paused', async () => {
      const now = await h.store().now();
      const claim = { workerId: 'w-eager', leaseToken: 'L-eager', leaseMs: 30_000 };
      const [r] = await h.store().taskEnqueue({ tasks: [{ ...task('e', { id: 'e1' }), claim }] });
      expect(r!.task).toMatchObject({ state: 'running', attempts: 1, workerId: 'w-eager', leaseToken: 'L-eager' });
      expect(await h.store().taskGet({ id: 'e1' })).toEqual(r!.task);
      expect(r!.task.leaseExpiresAt! - now).toBeGreaterThanOrEqual(29_000);
      expect(r!.task.claimedAt).toBe(r!.task.createdAt);
      // a claim finds nothing to take; its lease completes it
      expect(
        await h.store().taskClaim({ queue: 'e', limit: 10, leaseMs: 1000, workerId: 'w2', leaseToken: 'L2' }),
      ).toEqual([]);
      expect(await h.store().taskComplete({ items: [{ id: 'e1', leaseToken: 'L-eager', result: 1 }] })).toHaveLength(1);
      await h.store().pauseSet({ kind: 'queue', name: 'e', pausedBy: 'test', reason: 'hold' });
      const [paused] = await h
        .store()
        .taskEnqueue({ tasks: [{ ...task('e', { id: 'e2' }), claim: { ...claim, leaseToken: 'L-2' } }] });
      expect(paused!.task).toMatchObject({
        state: 'ready',
        attempts: 0,
        workerId: null,
        leaseToken: null,
        claimedAt: null,
      });
      expect(await h.store().taskGet({ id: 'e2' })).toEqual(paused!.task);
    });

    it('claims each task of one enqueue for its own claim, one without a claim not, the second of one ordering key not', async () => {
      const claim = (leaseToken: string) => ({ workerId: 'w-many', leaseToken, leaseMs: 30_000 });
      const results = await h.store().taskEnqueue({
        tasks: [
          { ...task('em', { id: 'm1' }), claim: claim('L1') },
          task('em', { id: 'm2' }),
          { ...task('em2', { id: 'm3', orderingKey: 'k' }), claim: claim('L3') },
          { ...task('em2', { id: 'm4', orderingKey: 'k' }), claim: claim('L4') },
          { ...task('em', { id: 'm5', orderingKey: 'k' }), claim: claim('L5') },
        ],
      });
      expect(results.map((r) => [r.task.id, r.task.state, r.task.leaseToken])).toEqual([
        ['m1', 'running', 'L1'],
        ['m2', 'ready', null],
        ['m3', 'running', 'L3'],
        ['m4', 'ready', null],
        // the same key in another queue is another key
        ['m5', 'running', 'L5'],
      ]);
      for (const r of results) expect(await h.store().taskGet({ id: r.task.id })).toEqual(r.task);
    });

    it('claims a task of an ordering key as it inserts it only while no other of its key waits or runs', async () => {
      const claim = (leaseToken: string) => ({ workerId: 'w-keyed', leaseToken, leaseMs: 30_000 });
      const enqueue = async (id: string, key: string, token: string) =>
        (await h.store().taskEnqueue({ tasks: [{ ...task('ek', { id, orderingKey: key }), claim: claim(token) }] }))[0]!
          .task;
      expect(await enqueue('x1', 'x', 'L1')).toMatchObject({ state: 'running', leaseToken: 'L1' });
      // x1 runs: x2 waits for it, as a claim would leave it
      expect(await enqueue('x2', 'x', 'L2')).toMatchObject({ state: 'ready', leaseToken: null, attempts: 0 });
      await h.store().taskComplete({ items: [{ id: 'x1', leaseToken: 'L1', result: null }] });
      // x2 is ready: x3 comes after it
      expect(await enqueue('x3', 'x', 'L3')).toMatchObject({ state: 'ready' });
      expect(await enqueue('y1', 'y', 'L4')).toMatchObject({ state: 'running' });
      expect(
        (await h.store().taskClaim({ queue: 'ek', limit: 10, leaseMs: 1000, workerId: 'w', leaseToken: 'L5' })).map(
          (t) => t.id,
        ),
      ).toEqual(['x2']);
    });
  });
}
