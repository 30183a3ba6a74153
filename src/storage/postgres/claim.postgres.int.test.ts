import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPostgresDatabase } from '../../testing/databases.js';
import type { NewTask, Store } from '../store.js';
import { openPostgresStore } from './store.js';

const task = (id: string, over: Partial<NewTask> = {}): NewTask => ({
  id,
  queue: 'q',
  payload: {},
  idempotencyKey: null,
  orderingKey: 'conversation-1',
  runAt: null,
  priority: 0,
  maxAttempts: 3,
  ...over,
});

/** A promise and the function that settles it: holds a transaction open until the test says so. */
function gate(): [Promise<void>, () => void] {
  let open!: () => void;
  return [new Promise<void>((resolve) => (open = resolve)), () => open()];
}

/**
 * Under READ COMMITTED each claim judges "no task of this key is running" on its own snapshot.
 * These are the interleavings where two snapshots disagree about which task of a key is the
 * oldest waiting one; each claimer would then take a different task of the same key.
 */
describe('claiming tasks with an ordering key on postgres', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openPostgresStore(await createPostgresDatabase());
  });
  afterEach(async () => {
    await store.close();
  });

  const claim = (s: Store, token: string) =>
    s.taskClaim({ queue: 'q', limit: 10, leaseMs: 60_000, workerId: token, leaseToken: token });

  it('never runs an older task whose enqueue commits late beside a newer one already claimed', async () => {
    const [enqueueCommits, commitEnqueue] = gate();
    const [enqueued, markEnqueued] = gate();
    const older = store.transaction(async (tx) => {
      await tx.taskEnqueue({ tasks: [task('older')] });
      markEnqueued();
      await enqueueCommits;
    });
    await enqueued;
    await store.taskEnqueue({ tasks: [task('newer')] });

    const [claimCommits, commitClaim] = gate();
    const [claimed, markClaimed] = gate();
    let first: string[] = [];
    const firstClaim = store.transaction(async (tx) => {
      first = (await claim(tx, 'first')).map((t) => t.id);
      markClaimed();
      await claimCommits;
    });
    await claimed;
    expect(first).toEqual(['newer']);

    commitEnqueue();
    await older;
    const second = claim(store, 'second');
    await sleep(50);
    commitClaim();
    await firstClaim;
    expect(await second).toEqual([]);
    expect((await claim(store, 'third')).map((t) => t.id)).toEqual([]);
  });

  it('never runs a redriven older task beside a newer one already claimed', async () => {
    await store.taskEnqueue({ tasks: [task('older')] });
    const [dying] = await claim(store, 'w0');
    await store.taskFail({ id: dying!.id, leaseToken: 'w0', error: 'boom', retryDelayMs: null });
    await store.taskEnqueue({ tasks: [task('newer')] });

    const [claimCommits, commitClaim] = gate();
    const [claimed, markClaimed] = gate();
    let first: string[] = [];
    const firstClaim = store.transaction(async (tx) => {
      first = (await claim(tx, 'first')).map((t) => t.id);
      markClaimed();
      await claimCommits;
    });
    await claimed;
    expect(first).toEqual(['newer']);

    await store.taskRedrive({ id: 'older' });
    const second = claim(store, 'second');
    await sleep(50);
    commitClaim();
    await firstClaim;
    expect(await second).toEqual([]);
  });

  it('lets claimers of a queue without ordering keys run side by side', async () => {
    await store.taskEnqueue({ tasks: [task('a', { orderingKey: null }), task('b', { orderingKey: null })] });
    const [claimCommits, commitClaim] = gate();
    const [claimed, markClaimed] = gate();
    let first: string[] = [];
    const holder = store.transaction(async (tx) => {
      first = (await tx.taskClaim({ queue: 'q', limit: 1, leaseMs: 60_000, workerId: 'a', leaseToken: 'a' })).map(
        (t) => t.id,
      );
      markClaimed();
      await claimCommits;
    });
    await claimed;
    const second = await claim(store, 'b');
    expect([...first, ...second.map((t) => t.id)]).toEqual(['a', 'b']);
    commitClaim();
    await holder;
  });
});
