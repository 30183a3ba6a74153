import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { ConflictError, LeaseLostError, NotFoundError } from '../errors.js';
import { task } from './conformance-rows.js';
import type { Store } from './store.js';

/**
 * The task cases about leases (holding, completing, failing, expiring under a lease token), registered
 * inside the suite's `tasks` block by `taskConformance`.
 */
export function taskLeaseConformance(h: { store: () => Store; openAnother: () => Promise<Store> }): void {
  it('holds leases all or nothing, writing nothing: a lost one fails the transaction, by its next statement at the latest', async () => {
    await h.store().taskEnqueue({ tasks: [task('q', { id: 't1' }), task('q', { id: 't2' })] });
    await h.store().taskClaim({ queue: 'q', limit: 2, leaseMs: 30_000, workerId: 'w', leaseToken: 'good' });
    const before = await h.store().taskGet({ id: 't1' });
    await h.store().transaction(async (tx) => {
      await tx.taskHold({
        leases: [
          { id: 't1', leaseToken: 'good' },
          { id: 't2', leaseToken: 'good' },
        ],
      });
      await tx.projectionPut({ name: 'hold', key: 'held', value: 1 });
    });
    // heartbeats extend leases; a write only checks them
    expect(await h.store().taskGet({ id: 't1' })).toEqual(before);
    for (const leases of [
      [
        { id: 't1', leaseToken: 'good' },
        { id: 't2', leaseToken: 'stale' },
      ],
      [
        { id: 't1', leaseToken: 'good' },
        { id: 't1', leaseToken: 'stale' },
      ],
      [
        { id: 't1', leaseToken: 'good' },
        { id: 't1', leaseToken: 'good' },
      ],
    ]) {
      await expect(
        h.store().transaction(async (tx) => {
          await tx.taskHold({ leases });
          await tx.projectionPut({ name: 'hold', key: 'lost', value: 1 });
        }),
      ).rejects.toThrow(LeaseLostError);
    }
    expect(await h.store().projectionGet({ name: 'hold', key: 'held' })).toBe(1);
    expect(await h.store().projectionGet({ name: 'hold', key: 'lost' })).toBeUndefined();
    await expect(h.store().taskHold({ leases: [{ id: 't2', leaseToken: 'stale' }] })).rejects.toThrow(LeaseLostError);
    // a task that is no longer running is not held, even with its last token
    await h.store().taskComplete({ items: [{ id: 't2', leaseToken: 'good', result: null }] });
    await expect(h.store().taskHold({ leases: [{ id: 't2', leaseToken: 'good' }] })).rejects.toThrow(LeaseLostError);
  });

  it('completes tasks all or nothing: one not held fails the transaction, by its next statement at the latest', async () => {
    await h.store().taskEnqueue({ tasks: [task('q', { id: 't1' }), task('q', { id: 't2' }), task('q', { id: 't3' })] });
    await h.store().taskClaim({ queue: 'q', limit: 3, leaseMs: 30_000, workerId: 'w', leaseToken: 'good' });
    const item = (id: string, leaseToken: string) => ({ id, leaseToken, result: { id } });
    for (const items of [
      [item('t1', 'good'), item('t2', 'stale')],
      [item('t1', 'good'), item('t1', 'stale')],
    ]) {
      await expect(
        h.store().transaction(async (tx) => {
          await tx.taskCompleteAll({ items });
          await tx.projectionPut({ name: 'complete', key: 'lost', value: 1 });
        }),
      ).rejects.toThrow(LeaseLostError);
    }
    expect(await h.store().taskGet({ id: 't1' })).toMatchObject({ state: 'running', leaseToken: 'good' });
    await h.store().transaction(async (tx) => {
      await tx.taskCompleteAll({ items: [item('t1', 'good'), item('t2', 'good')] });
      await tx.projectionPut({ name: 'complete', key: 'held', value: 1 });
    });
    expect(await h.store().taskGet({ id: 't2' })).toMatchObject({
      state: 'completed',
      result: { id: 't2' },
      leaseToken: null,
    });
    expect(await h.store().projectionGet({ name: 'complete', key: 'lost' })).toBeUndefined();
    await expect(h.store().taskCompleteAll({ items: [item('t1', 'good')] })).rejects.toThrow(LeaseLostError);
    expect(await h.store().taskGet({ id: 't3' })).toMatchObject({ state: 'running' });
  });

  it("journals each completion with its task: task.completed at the next version of the task's stream, which has no streams row", async () => {
    await h.store().taskEnqueue({ tasks: [task('c', { id: 'c1' }), task('c', { id: 'c2' }), task('c', { id: 'c3' })] });
    const claimed = await h
      .store()
      .taskClaim({ queue: 'c', limit: 3, leaseMs: 30_000, workerId: 'w1', leaseToken: 'l1' });
    const woken: string[] = [];
    const unlisten = await h.store().listen('events', (stream) => woken.push(stream));
    try {
      // an attempt's end journaled by an append, as a failure is: the stream goes on from its events
      await h.store().eventAppend({
        appends: [{ streamId: 'task:c3', expectedVersion: 1, events: [{ type: 'task.note', data: { n: 1 } }] }],
      });
      // wake-ups come in commit order: once the append's is in, so is every earlier one
      for (let i = 0; i < 300 && !woken.includes('task:c3'); i++) await sleep(10);
      woken.splice(0);
      const item = (id: string, leaseToken: string) => ({ id, leaseToken, result: id });
      expect(
        (await h.store().taskComplete({ items: [item('c1', 'l1'), item('c2', 'stale')] })).map((t) => t.id),
      ).toEqual(['c1']);
      await h.store().transaction(async (tx) => {
        await tx.taskCompleteAll({ items: [item('c3', 'l1')] });
        await tx.projectionPut({ name: 'complete', key: 'c3', value: 1 });
      });
      // a completion wakes who waits on the task's stream
      for (let i = 0; i < 300 && woken.length < 2; i++) await sleep(10);
      expect(woken).toEqual(['task:c1', 'task:c3']);
      const history = async (id: string) =>
        (await h.store().eventReadStream({ streamId: `task:${id}` })).map(({ version, type, data }) => ({
          version,
          type,
          data,
        }));
      const completed = (id: string) => ({
        attempt: 1,
        workerId: 'w1',
        claimedAt: claimed.find((t) => t.id === id)!.claimedAt,
        state: 'completed',
      });
      expect((await history('c1')).slice(1)).toEqual([{ version: 2, type: 'task.completed', data: completed('c1') }]);
      expect(await history('c2')).toHaveLength(1);
      expect((await history('c3')).slice(1)).toEqual([
        { version: 2, type: 'task.note', data: { n: 1 } },
        { version: 3, type: 'task.completed', data: completed('c3') },
      ]);
      expect(await h.store().streamList({ prefix: 'task:', limit: 10 })).toEqual([]);
      await expect(
        h.store().eventAppend({
          appends: [{ streamId: 'task:c1', expectedVersion: 1, events: [{ type: 'task.note', data: null }] }],
        }),
      ).rejects.toThrow(ConflictError);
      const [next] = (
        await h.store().eventAppend({
          appends: [{ streamId: 'task:c1', expectedVersion: 2, events: [{ type: 'task.note', data: null }] }],
        })
      ).events;
      expect(next?.version).toBe(3);
    } finally {
      await unlisten();
    }
  });

  it('fences completion, failure and heartbeat by lease token', async () => {
    await h.store().taskEnqueue({ tasks: [task('q', { id: 't1' }), task('q', { id: 't2' })] });
    await h.store().taskClaim({ queue: 'q', limit: 2, leaseMs: 30_000, workerId: 'w', leaseToken: 'good' });
    expect(
      await h.store().taskHeartbeat({
        leases: [
          { id: 't1', leaseToken: 'good' },
          { id: 't2', leaseToken: 'stale' },
        ],
        leaseMs: 60_000,
      }),
    ).toEqual(['t1']);
    expect(await h.store().taskComplete({ items: [{ id: 't1', leaseToken: 'stale', result: 1 }] })).toEqual([]);
    await expect(h.store().taskFail({ id: 't1', leaseToken: 'stale', error: 'x', retryDelayMs: 0 })).rejects.toThrow(
      LeaseLostError,
    );
    await expect(
      h.store().taskFail({ id: 'missing', leaseToken: 'good', error: 'x', retryDelayMs: 0 }),
    ).rejects.toThrow(NotFoundError);
    const done = await h.store().taskComplete({
      items: [
        { id: 't1', leaseToken: 'good', result: { ok: 1 } },
        { id: 't2', leaseToken: 'good', result: null },
      ],
    });
    expect(done.map((t) => t.id).sort()).toEqual(['t1', 't2']);
    expect(await h.store().taskGet({ id: 't1' })).toMatchObject({
      state: 'completed',
      result: { ok: 1 },
      leaseToken: null,
    });
    expect(await h.store().taskComplete({ items: [{ id: 't1', leaseToken: 'good', result: 2 }] })).toEqual([]);
    await expect(h.store().taskGet({ id: 'missing' })).rejects.toThrow(NotFoundError);
  });

  it('schedules a retry after the delay, and goes dead when told to', async () => {
    await h.store().taskEnqueue({ tasks: [task('q', { id: 't1' })] });
    await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L1' });
    const before = await h.store().now();
    const retried = await h
      .store()
      .taskFail({ id: 't1', leaseToken: 'L1', error: 'Error: flaky', retryDelayMs: 60_000 });
    expect(retried).toMatchObject({ state: 'ready', lastError: 'Error: flaky', leaseToken: null, attempts: 1 });
    expect(retried.runAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(
      await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L2' }),
    ).toEqual([]);
    await h.store().taskEnqueue({ tasks: [task('q', { id: 't2' })] });
    await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'L3' });
    const dead = await h
      .store()
      .taskFail({ id: 't2', leaseToken: 'L3', error: 'TerminalError: no', retryDelayMs: null });
    expect(dead).toMatchObject({ state: 'dead', lastError: 'TerminalError: no' });
    expect((await h.store().taskList({ state: 'dead', limit: 10 })).map((t) => t.id)).toEqual(['t2']);
  });

  it('expires leases: the task is ready again, or dead when out of attempts, and the old token is fenced', async () => {
    await h.store().taskEnqueue({ tasks: [task('q', { id: 't1', maxAttempts: 2 })] });
    await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 50, workerId: 'w1', leaseToken: 'L1' });
    expect(await h.store().taskExpire({ limit: 10 })).toEqual([]);
    await sleep(120);
    const [expired] = await h.store().taskExpire({ limit: 10 });
    expect(expired).toMatchObject({ id: 't1', state: 'ready', leaseToken: null });
    expect(expired?.lastError).toMatch(/lease expired/);
    const [again] = await h.store().taskClaim({ queue: 'q', limit: 1, leaseMs: 50, workerId: 'w2', leaseToken: 'L2' });
    expect(again?.attempts).toBe(2);
    expect(await h.store().taskComplete({ items: [{ id: 't1', leaseToken: 'L1', result: null }] })).toEqual([]);
    await sleep(120);
    expect((await h.store().taskExpire({ limit: 10 }))[0]).toMatchObject({ id: 't1', state: 'dead' });
  });
}
