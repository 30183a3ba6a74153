import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { NotFoundError } from '../errors.js';
import { task } from './conformance-rows.js';
import { taskLeaseConformance } from './conformance-task-leases.js';
import type { Store } from './store.js';

/** The task semantics of the conformance suite (`conformance.ts` sets up the store). */
export function taskConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  const openAnother = h.openAnother;

  describe('tasks', () => {
    it('enqueues once per idempotency key and queue', async () => {
      const [first] = await h.store().taskEnqueue({ tasks: [task('q', { idempotencyKey: 'k' })] });
      const [again] = await h
        .store()
        .taskEnqueue({ tasks: [task('q', { idempotencyKey: 'k', payload: { other: true } })] });
      const [elsewhere] = await h.store().taskEnqueue({ tasks: [task('q2', { idempotencyKey: 'k' })] });
      expect(first?.created).toBe(true);
      expect(again).toEqual({ task: first?.task, created: false });
      expect(elsewhere?.created).toBe(true);
      const batch = await h
        .store()
        .taskEnqueue({ tasks: [task('q', { idempotencyKey: 'b' }), task('q', { idempotencyKey: 'b' }), task('q')] });
      expect(batch.map((r) => r.created)).toEqual([true, false, true]);
      expect(batch[1]?.task.id).toBe(batch[0]?.task.id);
      expect(await h.store().taskList({ queue: 'q', limit: 100 })).toHaveLength(3);
      expect(first?.task).toMatchObject({
        queue: 'q',
        state: 'ready',
        payload: { n: 1 },
        attempts: 0,
        maxAttempts: 3,
        idempotencyKey: 'k',
      });
      // what an enqueue returns is the task as stored, every field
      const runAt = (await h.store().now()) + 60_000;
      const [full] = await h.store().taskEnqueue({
        tasks: [
          task('q3', { payload: { a: [1, 'x'] }, orderingKey: 'o', runAt, priority: 5, maxAttempts: 7, tag: 'wf@1' }),
        ],
      });
      for (const r of [first!, full!]) expect(await h.store().taskGet({ id: r.task.id })).toEqual(r.task);
    });

    it("journals each task it creates in the same write: one task.enqueued at version 1 of its stream, in the tasks' order", async () => {
      const now = await h.store().now();
      const before = await h.store().eventHead();
      const results = await h.store().taskEnqueue({
        tasks: [
          task('j', { id: 'j1', orderingKey: 'o', priority: 7, maxAttempts: 9 }),
          task('j', { id: 'j2', runAt: now + 60_000, idempotencyKey: 'once' }),
          task('j', { id: 'j3', idempotencyKey: 'once' }),
        ],
      });
      expect(results.map((r) => r.created)).toEqual([true, true, false]);
      const j1 = results[0]!.task;
      // committed reads stop below the oldest transaction still running on the server, whichever database it is in
      let events = (await h.store().eventReadCommitted({ after: before, limit: 10 })).events.map((e) => e.event);
      for (let tries = 0; events.length < 2 && tries < 100; tries++) {
        await sleep(50);
        events = (await h.store().eventReadCommitted({ after: before, limit: 10 })).events.map((e) => e.event);
      }
      // the same event on both backends, its run-at the one stored (the database clock's when none was given)
      expect(
        events.map(({ streamId, version, type, data, metadata }) => ({ streamId, version, type, data, metadata })),
      ).toEqual([
        {
          streamId: 'task:j1',
          version: 1,
          type: 'task.enqueued',
          data: { queue: 'j', orderingKey: 'o', runAt: j1.runAt, priority: 7, maxAttempts: 9, state: 'ready' },
          metadata: {},
        },
        {
          streamId: 'task:j2',
          version: 1,
          type: 'task.enqueued',
          data: { queue: 'j', orderingKey: null, runAt: now + 60_000, priority: 0, maxAttempts: 3, state: 'ready' },
          metadata: {},
        },
      ]);
      expect(j1.runAt).toBeGreaterThanOrEqual(now);
      expect(events[0]!.timestamp).toBe(j1.createdAt);
      // a repeated key journals nothing; a rolled back enqueue leaves neither row nor event
      await h.store().taskEnqueue({ tasks: [task('j', { idempotencyKey: 'once' })] });
      await expect(
        h.store().transaction(async (tx) => {
          await tx.taskEnqueue({ tasks: [task('j', { id: 'gone' })] });
          throw new Error('undo');
        }),
      ).rejects.toThrow('undo');
      expect((await h.store().eventReadStream({ streamId: 'task:gone' })).length).toBe(0);
      expect((await h.store().eventReadStream({ streamId: 'task:j2' })).length).toBe(1);
      expect(await h.store().taskList({ queue: 'j', limit: 10 })).toHaveLength(2);
    });

    it("wakes a queue's workers when a completion makes the next task of an ordering key claimable, and only then", async () => {
      await h.store().taskEnqueue({
        tasks: [
          task('wk', { id: 'a1', orderingKey: 'a' }),
          task('wk', { id: 'a2', orderingKey: 'a' }),
          task('wk2', { id: 'b1', orderingKey: 'b' }),
          task('wk3', { id: 'c1' }),
        ],
      });
      for (const queue of ['wk', 'wk2', 'wk3'])
        await h.store().taskClaim({ queue, limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L' });
      const woken: string[] = [];
      const unlisten = await h.store().listen('tasks', (queue) => woken.push(queue));
      // wake-ups come in commit order: once the marker's is in, so is every earlier one
      const upToMarker = async () => {
        await h.store().taskEnqueue({ tasks: [task('marker')] });
        for (let i = 0; i < 300 && !woken.includes('marker'); i++) await sleep(10);
        return woken.splice(0);
      };
      try {
        await upToMarker();
        const item = (id: string, leaseToken: string) => ({ id, leaseToken, result: null });
        // a2 waits for a1; nothing waits for b1, nor for c1 (no key)
        await h.store().transaction(async (tx) => {
          await tx.taskCompleteAll({ items: [item('a1', 'L'), item('b1', 'L')] });
          await tx.projectionPut({ name: 'complete', key: 'k', value: 1 });
        });
        expect(await h.store().taskComplete({ items: [item('c1', 'L')] })).toEqual([
          { id: 'c1', queue: 'wk3', orderingKey: null, next: false },
        ]);
        expect(await upToMarker()).toEqual(['wk', 'marker']);
        expect(
          (await h.store().taskClaim({ queue: 'wk', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' })).map(
            (t) => t.id,
          ),
        ).toEqual(['a2']);
        await h.store().taskEnqueue({ tasks: [task('wk', { id: 'a3', orderingKey: 'a' })] });
        expect(await h.store().taskComplete({ items: [item('a2', 'L2')] })).toEqual([
          { id: 'a2', queue: 'wk', orderingKey: 'a', next: true },
        ]);
        expect(
          (await h.store().taskClaim({ queue: 'wk', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L3' })).map(
            (t) => t.id,
          ),
        ).toEqual(['a3']);
        // the last of its key: no one to wake (the enqueue of a3 woke the queue, and a2's completion)
        await h.store().taskCompleteAll({ items: [item('a3', 'L3')] });
        expect(await upToMarker()).toEqual(['wk', 'wk', 'marker']);
      } finally {
        await unlisten();
      }
    });

    it('claims by priority then age, skips future run-at, and leases with the given token', async () => {
      const now = await h.store().now();
      await h.store().taskEnqueue({
        tasks: [
          task('q', { id: 't1' }),
          task('q', { id: 't2', priority: 5 }),
          task('q', { id: 't3', runAt: now + 60_000 }),
          task('q', { id: 't4' }),
        ],
      });
      const claimed = await h
        .store()
        .taskClaim({ queue: 'q', limit: 2, leaseMs: 30_000, workerId: 'w1', leaseToken: 'L1' });
      expect(claimed.map((t) => t.id)).toEqual(['t2', 't1']);
      expect(claimed[0]).toMatchObject({ state: 'running', attempts: 1, leaseToken: 'L1', workerId: 'w1' });
      expect(claimed[0]!.leaseExpiresAt! - now).toBeGreaterThanOrEqual(29_000);
      const rest = await h
        .store()
        .taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w1', leaseToken: 'L2' });
      expect(rest.map((t) => t.id)).toEqual(['t4']);
      expect(
        await h.store().taskClaim({ queue: 'other', limit: 10, leaseMs: 1000, workerId: 'w1', leaseToken: 'L3' }),
      ).toEqual([]);
      const dueIn = (await h.store().taskDueIn({ queue: 'q' }))!;
      expect(dueIn).toBeGreaterThan(50_000);
      expect(dueIn).toBeLessThanOrEqual(60_000);
      // a task due already is not waited for: a claim takes it, or it waits behind its ordering key for news
      await h.store().taskEnqueue({ tasks: [task('due', { id: 't5', runAt: now - 1000 })] });
      expect(await h.store().taskDueIn({ queue: 'due' })).toBeNull();
      // ...unless it became due after the claim that left it was sent (that claim may have found it not due)
      expect(await h.store().taskDueIn({ queue: 'due', lookbackMs: 60_000 })).toBeLessThanOrEqual(-1000);
      expect(await h.store().taskDueIn({ queue: 'due', lookbackMs: 10 })).toBeNull();
      expect(await h.store().taskDueIn({ queue: 'other' })).toBeNull();
    });

    it('releases claimed tasks whose attempt never started: ready again, in order, the attempt not counted', async () => {
      await h.store().taskEnqueue({
        tasks: [
          task('rel', { id: 'r1', orderingKey: 'k' }),
          task('rel', { id: 'r2', orderingKey: 'k' }),
          task('rel', { id: 'r3' }),
        ],
      });
      const claimed = await h
        .store()
        .taskClaim({ queue: 'rel', limit: 10, leaseMs: 30_000, workerId: 'w1', leaseToken: 'L1' });
      expect(claimed.map((t) => t.id).sort()).toEqual(['r1', 'r3']);
      expect(claimed[0]!.claimedAt).toBeGreaterThanOrEqual(claimed[0]!.createdAt);
      expect(
        await h.store().taskRelease({
          leases: [
            { id: 'r1', leaseToken: 'L1' },
            { id: 'r3', leaseToken: 'stale' },
          ],
        }),
      ).toEqual(['r1']);
      expect(await h.store().taskGet({ id: 'r1' })).toMatchObject({ state: 'ready', attempts: 0, leaseToken: null });
      expect(await h.store().taskGet({ id: 'r3' })).toMatchObject({ state: 'running', attempts: 1, leaseToken: 'L1' });
      // r1 is first of its key again: r2 still waits behind it
      const again = await h
        .store()
        .taskClaim({ queue: 'rel', limit: 10, leaseMs: 30_000, workerId: 'w2', leaseToken: 'L2' });
      expect(again.map((t) => t.id)).toEqual(['r1']);
      expect(again[0]).toMatchObject({ attempts: 1, workerId: 'w2' });
      // a failed attempt keeps its worker and start: the event that ends it names both
      await h.store().taskFail({ id: 'r1', leaseToken: 'L2', error: 'boom', retryDelayMs: 0 });
      expect(await h.store().taskGet({ id: 'r1' })).toMatchObject({
        state: 'ready',
        workerId: 'w2',
        claimedAt: again[0]!.claimedAt,
      });
    });

    it('runs one task per ordering key at a time, in arrival order', async () => {
      await h.store().taskEnqueue({
        tasks: [
          task('q', { id: 'a1', orderingKey: 'a' }),
          task('q', { id: 'a2', orderingKey: 'a', priority: 9 }),
          task('q', { id: 'b1', orderingKey: 'b' }),
          task('q', { id: 'a3', orderingKey: 'a' }),
        ],
      });
      const first = await h
        .store()
        .taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' });
      expect(first.map((t) => t.id).sort()).toEqual(['a1', 'b1']);
      expect(
        await h.store().taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' }),
      ).toEqual([]);
      await h.store().taskFail({ id: 'a1', leaseToken: 'L1', error: 'retry me', retryDelayMs: 0 });
      const retried = await h
        .store()
        .taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L3' });
      expect(retried.map((t) => t.id)).toEqual(['a1']);
      await h.store().taskComplete({ items: [{ id: 'a1', leaseToken: 'L3', result: null }] });
      expect(
        (await h.store().taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L4' })).map(
          (t) => t.id,
        ),
      ).toEqual(['a2']);
    });

    it('moves the waiting tasks of an ordering key earlier, never later', async () => {
      const now = await h.store().now();
      await h
        .store()
        .taskEnqueue({ tasks: [task('q', { id: 'later', orderingKey: 'run-1', runAt: now + 3_600_000 })] });
      expect(
        await h.store().taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' }),
      ).toEqual([]);
      expect(await h.store().taskReschedule({ queue: 'q', orderingKey: 'run-1', runAt: now })).toBe(1);
      expect(await h.store().taskReschedule({ queue: 'q', orderingKey: 'run-1', runAt: now + 7_200_000 })).toBe(1);
      expect((await h.store().taskGet({ id: 'later' })).runAt).toBe(now);
      expect(await h.store().taskReschedule({ queue: 'q', orderingKey: 'other', runAt: now })).toBe(0);
      expect(
        (await h.store().taskClaim({ queue: 'q', limit: 10, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' })).map(
          (t) => t.id,
        ),
      ).toEqual(['later']);
      expect(await h.store().taskReschedule({ queue: 'q', orderingKey: 'run-1', runAt: now })).toBe(0);
    });

    it('redrives a dead task once', async () => {
      await h.store().taskEnqueue({ tasks: [task('q', { id: 't1' })] });
      await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' });
      await h.store().taskFail({ id: 't1', leaseToken: 'L1', error: 'bad', retryDelayMs: null });
      const first = await h.store().taskRedrive({ id: 't1' });
      expect(first.redriven).toBe(true);
      expect(first.task).toMatchObject({ state: 'ready', attempts: 0 });
      expect((await h.store().taskRedrive({ id: 't1' })).redriven).toBe(false);
      await expect(h.store().taskRedrive({ id: 'missing' })).rejects.toThrow(NotFoundError);
      expect(
        await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' }),
      ).toHaveLength(1);
    });

    it('lists by queue and state with a cursor, and counts in status', async () => {
      await h.store().taskEnqueue({ tasks: ['t1', 't2', 't3'].map((id) => task('q', { id })) });
      await h.store().taskEnqueue({ tasks: [task('other', { id: 't4' })] });
      const page1 = await h.store().taskList({ queue: 'q', limit: 2 });
      const page2 = await h.store().taskList({ queue: 'q', limit: 2, afterId: page1.at(-1)!.id });
      expect([...page1, ...page2].map((t) => t.id)).toEqual(['t1', 't2', 't3']);
      expect((await h.store().taskList({ state: 'ready', limit: 10 })).length).toBe(4);
      const status = await h.store().status();
      expect(status).toMatchObject({
        dialect: h.store().dialect,
        tasks: { ready: 4, running: 0, completed: 0, dead: 0 },
      });
      expect(status.schemaVersion).toBeGreaterThanOrEqual(1);
    });

    it('never hands two concurrent claimers the same task or two tasks of one ordering key', async () => {
      const other = await openAnother();
      const tasks = Array.from({ length: 60 }, (_, i) =>
        task('q', { id: `t${String(i).padStart(3, '0')}`, orderingKey: `k${i % 3}` }),
      );
      await h.store().taskEnqueue({ tasks });
      const running = new Map<string, string>();
      const order: string[] = [];
      const claimer = async (s: Store, name: string) => {
        for (let idle = 0; idle < 50; ) {
          const claimed = await s.taskClaim({
            queue: 'q',
            limit: 3,
            leaseMs: 30_000,
            workerId: name,
            leaseToken: `${name}-${order.length}`,
          });
          if (claimed.length === 0) {
            idle++;
            await sleep(2);
            continue;
          }
          for (const t of claimed) {
            expect(running.has(t.orderingKey!), `two tasks of ${t.orderingKey} at once`).toBe(false);
            running.set(t.orderingKey!, t.id);
            order.push(t.id);
          }
          await sleep(1);
          for (const t of claimed) running.delete(t.orderingKey!);
          await s.taskComplete({ items: claimed.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: null })) });
        }
      };
      await Promise.all([claimer(h.store(), 'a'), claimer(other, 'b'), claimer(h.store(), 'c'), claimer(other, 'd')]);
      expect([...order].sort()).toEqual(tasks.map((t) => t.id));
      for (const key of ['k0', 'k1', 'k2']) {
        const ofKey = order.filter((id) => tasks.find((t) => t.id === id)?.orderingKey === key);
        expect(ofKey).toEqual([...ofKey].sort());
      }
    });

    taskLeaseConformance(h);
  });
}
