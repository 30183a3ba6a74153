import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { task } from './conformance-rows.js';
import type { Store, Task } from './store.js';
import { AGING_STEP_MS } from './tasks.js';

/**
 * Flow control in the claim (issue 40): a concurrency key's limit, a queue's limit and priority aging
 * (`conformance.ts` sets up the store).
 */
export function concurrencyConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  const claim = (s: Store, queue: string, token: string, limit = 10, leaseMs = 30_000) =>
    s.taskClaim({ queue, limit, leaseMs, workerId: `w-${token}`, leaseToken: token });
  const complete = (s: Store, tasks: Task[]) =>
    s.taskComplete({ items: tasks.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: null })) });
  const running = async (s: Store, queue: string) =>
    (await s.taskList({ queue, state: 'running', limit: 1000 })).length;

  describe('task concurrency limits', () => {
    it('runs at most the limit of a key at once across three claimers, in arrival order, each task once', async () => {
      const others = [await h.openAnother(), await h.openAnother()];
      const tasks = Array.from({ length: 6 }, (_, i) =>
        task('cq', { id: `c${i}`, concurrency: { key: 'user:1', limit: 2 } }),
      );
      await h.store().taskEnqueue({ tasks });
      const order: string[] = [];
      let most = 0;
      const claimer = async (s: Store, name: string) => {
        for (let idle = 0; idle < 40; ) {
          const claimed = await claim(s, 'cq', `${name}-${order.length}-${idle}`, 3);
          if (claimed.length === 0) {
            idle++;
            await sleep(2);
            continue;
          }
          order.push(...claimed.map((t) => t.id));
          most = Math.max(most, await running(s, 'cq'));
          await sleep(3);
          await complete(s, claimed);
        }
      };
      await Promise.all([claimer(h.store(), 'a'), claimer(others[0]!, 'b'), claimer(others[1]!, 'c')]);
      expect(most).toBeLessThanOrEqual(2);
      expect(most).toBeGreaterThan(0);
      // each task once (the order of the key's tasks: below, with one claimer, whose answers cannot cross)
      expect([...order].sort()).toEqual(tasks.map((t) => t.id));
      expect((await h.store().taskList({ queue: 'cq', state: 'completed', limit: 100 })).length).toBe(6);
    });

    it('fills the free slots of each key, oldest first, keys apart, and wakes the queue when a slot frees', async () => {
      const s = h.store();
      const k = (id: string, key: string, limit: number) => task('ck', { id, concurrency: { key, limit } });
      const [first] = await s.taskEnqueue({ tasks: [k('a1', 'a', 2)] });
      expect(first!.task.concurrency).toEqual({ key: 'a', limit: 2 });
      expect(await s.taskGet({ id: 'a1' })).toEqual(first!.task);
      // the journal says it: a checker of the limit reads the key from the task's history
      const [enqueued] = await s.eventReadStream({ streamId: 'task:a1' });
      expect(enqueued!.data).toMatchObject({ concurrency: { key: 'a', limit: 2 } });
      await s.taskEnqueue({
        tasks: [k('a2', 'a', 2), k('a3', 'a', 2), k('b1', 'b', 1), k('b2', 'b', 1), task('ck', { id: 'p1' })],
      });
      const one = await claim(s, 'ck', 'L1', 10);
      expect(one.map((t) => t.id)).toEqual(['a1', 'a2', 'b1', 'p1']);
      expect(await claim(s, 'ck', 'L2')).toEqual([]);
      const [done] = await complete(
        s,
        one.filter((t) => t.id === 'a1'),
      );
      // a3 waits for that slot: the completion says so, so the queue's workers are woken
      expect(done).toMatchObject({ id: 'a1', next: true });
      expect((await claim(s, 'ck', 'L3')).map((t) => t.id)).toEqual(['a3']);
      const b1 = one.filter((t) => t.id === 'b1');
      await s.taskFail({ id: 'b1', leaseToken: b1[0]!.leaseToken!, error: 'x', retryDelayMs: 60_000 });
      // b1 waits a minute for its retry: b2, behind it, is not held back by a task not due
      expect((await claim(s, 'ck', 'L4')).map((t) => t.id)).toEqual(['b2']);
      const [last] = await complete(s, (await claim(s, 'ck', 'L5')).concat(one.filter((t) => t.id === 'a2')));
      expect(last).toMatchObject({ id: 'a2', next: false });
    });

    it('gives a slot back when the lease of its holder is ended', async () => {
      const s = h.store();
      await s.taskEnqueue({
        tasks: ['r1', 'r2', 'r3'].map((id) => task('cr', { id, concurrency: { key: 'k', limit: 2 } })),
      });
      const held = await claim(s, 'cr', 'L1', 10, 1);
      expect(held.map((t) => t.id)).toEqual(['r1', 'r2']);
      expect(await claim(s, 'cr', 'L2')).toEqual([]);
      await sleep(5);
      expect((await s.taskExpire({ limit: 10 })).map((t) => t.id).sort()).toEqual(['r1', 'r2']);
      // the ended leases' tasks are first again, in arrival order; r3 waits for a slot
      expect((await claim(s, 'cr', 'L3')).map((t) => t.id)).toEqual(['r1', 'r2']);
      expect(await claim(s, 'cr', 'L4')).toEqual([]);
    });

    it('never claims a task of a key as it is inserted: the claim counts its slots', async () => {
      const s = h.store();
      const [r] = await s.taskEnqueue({
        tasks: [
          {
            ...task('ce', { id: 'e1', concurrency: { key: 'k', limit: 5 } }),
            claim: { workerId: 'w', leaseToken: 'L', leaseMs: 30_000 },
          },
        ],
      });
      expect(r!.task).toMatchObject({ state: 'ready', leaseToken: null, concurrency: { key: 'k', limit: 5 } });
      // with an idempotency key: once, and the stored task has its key
      const keyed = task('ce', { id: 'e2', idempotencyKey: 'once', concurrency: { key: 'k', limit: 5 } });
      await s.taskEnqueue({ tasks: [keyed] });
      const [again] = await s.taskEnqueue({ tasks: [{ ...keyed, id: 'e3' }] });
      expect(again).toMatchObject({ created: false, task: { id: 'e2', concurrency: { key: 'k', limit: 5 } } });
    });
  });

  describe('queue limits', () => {
    it('claims no more than the free slots of a queue with a limit, changed or removed at once', async () => {
      const s = h.store();
      const other = await h.openAnother();
      await s.taskEnqueue({ tasks: Array.from({ length: 8 }, (_, i) => task('ql', { id: `q${i}` })) });
      expect(await s.queueLimitList()).toEqual([]);
      await s.queueLimitSet({ queue: 'ql', concurrency: 3 });
      expect(await other.queueLimitList()).toEqual([{ queue: 'ql', concurrency: 3 }]);
      const [a, b] = await Promise.all([claim(s, 'ql', 'L1'), claim(other, 'ql', 'L2')]);
      expect(a!.length + b!.length).toBe(3);
      expect(await claim(s, 'ql', 'L3')).toEqual([]);
      const [done] = await complete(s, a!.length > 0 ? a!.slice(0, 1) : b!.slice(0, 1));
      // a slot freed, a task waits for it: the queue's workers are woken
      expect(done!.next).toBe(true);
      expect(await claim(other, 'ql', 'L4')).toHaveLength(1);
      // a task enqueued with a claim is not claimed past the limit
      const [eager] = await s.taskEnqueue({
        tasks: [{ ...task('ql', { id: 'q8' }), claim: { workerId: 'w', leaseToken: 'L5', leaseMs: 30_000 } }],
      });
      expect(eager!.task.state).toBe('ready');
      await s.queueLimitSet({ queue: 'ql', concurrency: 5 });
      expect(await claim(s, 'ql', 'L6')).toHaveLength(2);
      await s.queueLimitSet({ queue: 'ql', concurrency: null });
      expect(await s.queueLimitList({ queue: 'ql' })).toEqual([]);
      expect(await claim(s, 'ql', 'L7')).toHaveLength(3);
      expect(await running(s, 'ql')).toBe(8);
    });
  });

  describe('priority aging', () => {
    it('claims the higher priority first within a window, FIFO within a priority, and a long wait first', async () => {
      const s = h.store();
      const now = await s.now();
      await s.taskEnqueue({
        tasks: [
          // waited 3 steps: ahead of priority 2 due now, not of priority 5
          task('pa', { id: 'old-low', priority: 0, runAt: now - 3 * AGING_STEP_MS }),
          task('pa', { id: 'p2', priority: 2, runAt: now }),
          task('pa', { id: 'p5', priority: 5, runAt: now }),
          task('pa', { id: 'low-a', priority: 0, runAt: now }),
          task('pa', { id: 'low-b', priority: 0, runAt: now }),
          task('pa', { id: 'minus', priority: -1, runAt: now - AGING_STEP_MS / 2 }),
        ],
      });
      const first = await claim(s, 'pa', 'L1', 2);
      expect(first.map((t) => t.id)).toEqual(['p5', 'old-low']);
      expect((await claim(s, 'pa', 'L2', 10)).map((t) => t.id)).toEqual(['p2', 'low-a', 'low-b', 'minus']);
      // priority keeps its meaning in the API
      expect((await s.taskGet({ id: 'p5' })).priority).toBe(5);
    });
  });
}
