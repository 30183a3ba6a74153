import { describe, expect, it } from 'vitest';
import { ConflictError, LeaseLostError } from '../errors.js';
import { task } from './conformance-rows.js';
import type { NewTask, Store, Task } from './store.js';
import type { TaskOnLimit } from './tasks.js';

/**
 * Flow control of tasks at the enqueue and in the claim's order (issue 40): fairness groups (`NewTask.fairBy`) and a
 * key's `onLimit` (`drop_newest`, `cancel_in_progress`); `conformance.ts` sets up the store.
 */
export function taskFlowConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  const claimOne = async (s: Store, queue: string, token: string): Promise<Task[]> => {
    const claimed = await s.taskClaim({ queue, limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: token });
    await s.taskComplete({ items: claimed.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: null })) });
    return claimed;
  };
  const group = (queue: string, g: string, n: number, over: Partial<NewTask> = {}) =>
    Array.from({ length: n }, (_, i) => task(queue, { id: `${queue}-${g}${i}`, fairBy: g, ...over }));

  describe('task fairness groups', () => {
    it('takes turns between groups: 10 of B enqueued after 1,000 of A are all claimed within the first 21', async () => {
      const s = h.store();
      await s.taskEnqueue({ tasks: group('fq', 'A', 1000, { runAt: (await s.now()) - 1000 }) });
      // B one at a time: each enqueue finds its group's last turn (and in one batch, below)
      for (const t of group('fq', 'B', 10)) await s.taskEnqueue({ tasks: [t] });
      const got: string[] = [];
      // B joins at A's second turn: A0, A1, B0, A2, B1, …, A10, B9
      for (let i = 0; i < 21; i++) got.push(...(await claimOne(s, 'fq', `L${i}`)).map((t) => t.id));
      expect(got.filter((id) => id.startsWith('fq-B'))).toEqual(group('fq', 'B', 10).map((t) => t.id));
      // each group in its own arrival order
      expect(got.filter((id) => id.startsWith('fq-A'))).toEqual(group('fq', 'A', 11).map((t) => t.id));
      const stored = await s.taskGet({ id: 'fq-B0' });
      expect(stored.fairBy).toBe('B');
      const [enqueued] = await s.eventReadStream({ streamId: 'task:fq-B0' });
      expect(enqueued!.data).toMatchObject({ fairBy: 'B' });
      // a task without a group is FIFO by its run-at among the turns; the queue still drains, each task once
      const rest = await s.taskClaim({ queue: 'fq', limit: 2000, leaseMs: 30_000, workerId: 'w', leaseToken: 'all' });
      expect(rest).toHaveLength(989);
      expect(new Set(rest.map((t) => t.id)).size).toBe(989);
    });

    it('takes turns within a concurrency key, and a big claim returns them in turn order', async () => {
      const s = h.store();
      const key = { concurrency: { key: 'model', limit: 1 } };
      await s.taskEnqueue({ tasks: group('fk', 'A', 200, { ...key, runAt: (await s.now()) - 1000 }) });
      await s.taskEnqueue({ tasks: group('fk', 'B', 5, key) });
      const got: string[] = [];
      for (let i = 0; i < 11; i++) got.push(...(await claimOne(s, 'fk', `K${i}`)).map((t) => t.id));
      expect(got).toHaveLength(11);
      expect(got.filter((id) => id.startsWith('fk-B'))).toEqual(group('fk', 'B', 5).map((t) => t.id));
      // without a key: one claim of many returns A0, A1, B0, A2, B1 (the claim's order: B joins the next round)
      await s.taskEnqueue({ tasks: group('fm', 'A', 3, { runAt: (await s.now()) - 1000 }) });
      await s.taskEnqueue({ tasks: group('fm', 'B', 2) });
      const many = await s.taskClaim({ queue: 'fm', limit: 5, leaseMs: 30_000, workerId: 'w', leaseToken: 'M' });
      expect(many.map((t) => t.id)).toEqual(['fm-A0', 'fm-A1', 'fm-B0', 'fm-A2', 'fm-B1']);
    });

    it('claims a task of a group as it is inserted, for an idle worker, as any other', async () => {
      const s = h.store();
      const claim = { workerId: 'w-eager', leaseToken: 'L-fair', leaseMs: 30_000 };
      const [r] = await s.taskEnqueue({ tasks: [{ ...task('fe', { id: 'fe1', fairBy: 'g' }), claim }] });
      expect(r!.task).toMatchObject({ state: 'running', leaseToken: 'L-fair', fairBy: 'g' });
      expect(await s.taskGet({ id: 'fe1' })).toEqual(r!.task);
    });
  });

  describe('a full concurrency key at the enqueue', () => {
    const k = (id: string, onLimit: TaskOnLimit = 'queue', over: Partial<NewTask> = {}) =>
      task('ol', { id, concurrency: { key: 'user:1', limit: 2, onLimit }, ...over });

    it('drop_newest refuses the task naming the limit, counting waiting and running tasks, and journals nothing', async () => {
      const s = h.store();
      await s.taskEnqueue({ tasks: [k('d1', 'drop_newest'), k('d2', 'drop_newest', { idempotencyKey: 'i2' })] });
      expect(await claimOne(s, 'ol', 'D1')).toHaveLength(1);
      // d1 is done: d2 waits, d3 takes the second place
      await s.taskEnqueue({ tasks: [k('d3', 'drop_newest')] });
      const refused = s.taskEnqueue({ tasks: [k('d4', 'drop_newest')] });
      await expect(refused).rejects.toThrow(ConflictError);
      await expect(refused).rejects.toThrow('concurrency user:1 — 2 of 2 in use');
      await expect(s.taskGet({ id: 'd4' })).rejects.toThrow('not found');
      expect(await s.eventReadStream({ streamId: 'task:d4' })).toEqual([]);
      // a repeated enqueue (its idempotency key) is the stored task, not refused
      const [again] = await s.taskEnqueue({ tasks: [k('d2-again', 'drop_newest', { idempotencyKey: 'i2' })] });
      expect(again).toMatchObject({ created: false, task: { id: 'd2' } });
      // a running task counts too
      const [running] = await s.taskClaim({ queue: 'ol', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'D2' });
      expect(running!.id).toBe('d2');
      await expect(s.taskEnqueue({ tasks: [k('d5', 'drop_newest')] })).rejects.toThrow('2 of 2 in use');
      await s.taskComplete({ items: [{ id: 'd2', leaseToken: 'D2', result: null }] });
      const [ok] = await s.taskEnqueue({ tasks: [k('d6', 'drop_newest')] });
      expect(ok!.created).toBe(true);
    });

    it('cancel_in_progress cancels the oldest of the key in flight, a running one too: the newest wins', async () => {
      const s = h.store();
      await s.taskEnqueue({ tasks: [k('c1', 'cancel_in_progress')] });
      const [c1] = await s.taskClaim({ queue: 'ol', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'C1' });
      expect(c1!.id).toBe('c1');
      await s.taskEnqueue({ tasks: [k('c2', 'cancel_in_progress')] });
      // c3 finds the key full (c1 running, c2 waiting): c1 is the oldest, its attempt ends; c4 then cancels c2
      await s.taskEnqueue({ tasks: [k('c3', 'cancel_in_progress'), k('c4', 'cancel_in_progress')] });
      expect(await s.taskGet({ id: 'c1' })).toMatchObject({
        state: 'dead',
        leaseToken: null,
        leaseExpiresAt: null,
        lastError: 'cancelled: task c3 of concurrency user:1 is newer (cancel_in_progress)',
      });
      expect(await s.taskGet({ id: 'c2' })).toMatchObject({ state: 'dead', lastError: expect.stringContaining('c4') });
      const ran = await s.eventReadStream({ streamId: 'task:c1' });
      expect(ran.map((e) => e.type)).toEqual(['task.enqueued', 'task.cancelled']);
      expect(ran[1]!.data).toEqual({
        by: 'c3',
        reason: expect.stringContaining('c3'),
        attempt: 1,
        workerId: 'w',
        claimedAt: c1!.claimedAt,
        state: 'dead',
      });
      const waited = await s.eventReadStream({ streamId: 'task:c2' });
      expect(waited.map((e) => e.type)).toEqual(['task.enqueued', 'task.cancelled']);
      expect(waited[1]!.data).toEqual({ by: 'c4', reason: expect.stringContaining('c4'), state: 'dead' });
      // c1's slot is the newer ones': both run now, under the limit of 2
      const next = await s.taskClaim({ queue: 'ol', limit: 5, leaseMs: 30_000, workerId: 'w', leaseToken: 'C34' });
      expect(next.map((t) => t.id).sort()).toEqual(['c3', 'c4']);
    });

    it("cancel_in_progress: a running task's lease is gone, and nothing its worker does after revives it", async () => {
      const s = h.store();
      await s.taskEnqueue({ tasks: [k('r1', 'cancel_in_progress'), k('r2', 'cancel_in_progress')] });
      await s.taskClaim({ queue: 'ol', limit: 2, leaseMs: 30_000, workerId: 'w', leaseToken: 'R' });
      await s.taskEnqueue({ tasks: [k('r3', 'cancel_in_progress')] });
      const lease = { id: 'r1', leaseToken: 'R' };
      expect(await s.taskHeartbeat({ leases: [lease, { id: 'r2', leaseToken: 'R' }], leaseMs: 30_000 })).toEqual([
        'r2',
      ]);
      await expect(s.taskHold({ leases: [lease] })).rejects.toThrow(LeaseLostError);
      expect(await s.taskComplete({ items: [{ ...lease, result: 'late' }] })).toEqual([]);
      await expect(s.taskCompleteAll({ items: [{ ...lease, result: 'late' }] })).rejects.toThrow(LeaseLostError);
      await expect(s.taskFail({ ...lease, error: 'aborted', retryDelayMs: 0 })).rejects.toThrow(LeaseLostError);
      expect(await s.taskRelease({ leases: [lease] })).toEqual([]);
      expect(await s.taskExpire({ limit: 10 })).toEqual([]);
      expect(await s.taskGet({ id: 'r1' })).toMatchObject({ state: 'dead', result: null });
      expect((await s.eventReadStream({ streamId: 'task:r1' })).map((e) => e.type)).toEqual([
        'task.enqueued',
        'task.cancelled',
      ]);
      // one slot freed, once: r3 takes it, and nothing more of the key runs while r2 does
      const claimed = await s.taskClaim({ queue: 'ol', limit: 5, leaseMs: 30_000, workerId: 'w', leaseToken: 'R3' });
      expect(claimed.map((t) => t.id)).toEqual(['r3']);
      await s.taskEnqueue({ tasks: [k('r4')] });
      expect(await s.taskClaim({ queue: 'ol', limit: 5, leaseMs: 30_000, workerId: 'w', leaseToken: 'R4' })).toEqual(
        [],
      );
    });

    it('cancel_in_progress from three stores while workers settle and claim: never over the limit', async () => {
      const stores = [h.store(), await h.openAnother(), await h.openAnother()];
      const key = (id: string) =>
        task('storm', { id, concurrency: { key: 'k', limit: 2, onLimit: 'cancel_in_progress' } });
      let most = 0;
      // a worker's group commit: completes what it ran, then claims, in one transaction (the order a lock cycle needs)
      const work = async (s: Store, w: string) => {
        let held: Task[] = [];
        for (let i = 0; i < 15; i++) {
          held = await s.transaction(async (tx) => {
            await tx.taskComplete({ items: held.map((t) => ({ id: t.id, leaseToken: t.leaseToken!, result: i })) });
            return tx.taskClaim({ queue: 'storm', limit: 2, leaseMs: 30_000, workerId: w, leaseToken: `${w}-${i}` });
          });
          most = Math.max(most, (await s.taskList({ queue: 'storm', state: 'running', limit: 10 })).length);
        }
      };
      const enqueue = async (s: Store, i: number) => {
        for (let j = 0; j < 10; j++) await s.taskEnqueue({ tasks: [key(`s${i}-${j}`)] });
      };
      await Promise.all([work(stores[0]!, 'a'), work(stores[1]!, 'b'), ...stores.map(enqueue)]);
      expect(most).toBeLessThanOrEqual(2);
      const all = await h.store().taskList({ queue: 'storm', limit: 100 });
      expect(all).toHaveLength(30);
      expect(all.filter((t) => t.state === 'ready' || t.state === 'running').length).toBeLessThanOrEqual(2);
      // every task cancelled says so once, and never completed as well
      for (const t of all.filter((x) => x.state === 'dead')) {
        const types = (await h.store().eventReadStream({ streamId: `task:${t.id}` })).map((e) => e.type);
        expect(types).toEqual(['task.enqueued', 'task.cancelled']);
      }
    });

    it('drop_newest: enqueues from three stores at once never put more than the limit in', async () => {
      const stores = [h.store(), await h.openAnother(), await h.openAnother()];
      const tries = stores.flatMap((s, i) =>
        Array.from({ length: 8 }, (_, j) =>
          s
            .taskEnqueue({
              tasks: [task('race', { id: `r${i}-${j}`, concurrency: { key: 'k', limit: 3, onLimit: 'drop_newest' } })],
            })
            .then(
              () => 'in',
              (e: unknown) => (e instanceof ConflictError ? 'refused' : Promise.reject(e)),
            ),
        ),
      );
      const outcomes = await Promise.all(tries);
      expect(outcomes.filter((o) => o === 'in')).toHaveLength(3);
      expect(await h.store().taskList({ queue: 'race', limit: 100 })).toHaveLength(3);
    });
  });
}
