import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPostgresDatabase } from '../../testing/databases.js';
import { task } from '../conformance-rows.js';
import type { Store } from '../store.js';
import { openPostgresStore } from './store.js';

/**
 * A batch checks its leases without extending them (`taskHold`), so a lease may run out while the
 * batch is open: the check must keep the task from being taken over until the batch commits, or a
 * write made under a lease would commit after another worker took the task.
 */
describe('holding leases on postgres', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openPostgresStore(await createPostgresDatabase());
  });
  afterEach(async () => {
    await store.close();
  });

  it('keeps an expired lease from being ended until the batch that checked it commits', async () => {
    await store.taskEnqueue({ tasks: [task('q', { id: 't1' })] });
    await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 50, workerId: 'w', leaseToken: 'a' });
    let commit!: () => void;
    const commits = new Promise<void>((resolve) => (commit = resolve));
    let checked!: () => void;
    const held = new Promise<void>((resolve) => (checked = resolve));
    const batch = store.transaction(async (tx) => {
      await tx.taskHold({ leases: [{ id: 't1', leaseToken: 'a' }] });
      await tx.projectionPut({ name: 'hold', key: 'w', value: 1 }); // carries the check
      checked();
      await commits;
    });
    try {
      await held;
      await sleep(100); // the lease ran out
      expect(await store.taskExpire({ limit: 10 })).toEqual([]);
    } finally {
      commit();
      await batch;
    }
    expect((await store.taskExpire({ limit: 10 })).map((t) => t.id)).toEqual(['t1']);
    expect(await store.projectionGet({ name: 'hold', key: 'w' })).toBe(1);
  });
});
