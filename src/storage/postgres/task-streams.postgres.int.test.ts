import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConflictError } from '../../errors.js';
import { createPostgresDatabase } from '../../testing/databases.js';
import { task } from '../conformance-rows.js';
import type { Store } from '../store.js';
import { openPostgresStore } from './store.js';

/**
 * A task's stream has no `streams` row to lock (migration 160): its writers are kept apart by the
 * task's row. An append to it that does not hold the row, racing a completion, must fail as a
 * conflict, never write a version twice or leave a gap.
 */
describe("a task's stream on postgres", () => {
  let store: Store;
  let url: string;
  beforeEach(async () => {
    url = await createPostgresDatabase();
    store = await openPostgresStore(url);
  });
  afterEach(async () => {
    await store.close();
  });

  it('fails an append racing the completion of its task as a conflict, and keeps the versions gapless', async () => {
    await store.taskEnqueue({ tasks: [task('q', { id: 't1' })] });
    await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'a' });
    let commit!: () => void;
    const commits = new Promise<void>((resolve) => (commit = resolve));
    let completed!: () => void;
    const done = new Promise<void>((resolve) => (completed = resolve));
    const completion = store.transaction(async (tx) => {
      await tx.taskComplete({ items: [{ id: 't1', leaseToken: 'a', result: null }] });
      completed();
      await commits;
    });
    await done;
    // sees version 1 only, writes version 2, and waits on the key for the completion's version 2
    const racing = store.eventAppend({
      appends: [{ streamId: 'task:t1', events: [{ type: 'task.note', data: null }] }],
    });
    await sleep(100);
    // the expectation holds the rejection from now: it can land while the completion's commit is awaited
    const refused = expect(racing).rejects.toThrow(ConflictError);
    commit();
    await completion;
    await refused;
    const history = await store.eventReadStream({ streamId: 'task:t1' });
    expect(history.map((e) => [e.version, e.type])).toEqual([
      [1, 'task.enqueued'],
      [2, 'task.completed'],
    ]);
    const [next] = (
      await store.eventAppend({ appends: [{ streamId: 'task:t1', events: [{ type: 'task.note', data: null }] }] })
    ).events;
    expect(next?.version).toBe(3);
  });

  it('keeps a process of the previous version working: its completion journals once, its stream row is not read', async () => {
    await store.taskEnqueue({ tasks: [task('q', { id: 't1' })] });
    await store.taskClaim({ queue: 'q', limit: 1, leaseMs: 30_000, workerId: 'w', leaseToken: 'a' });
    const old = new pg.Client({ connectionString: url });
    await old.connect();
    try {
      // what the previous version sent for a task: a stream row at its enqueue, then its completion and its own append of task.completed
      await old.query("INSERT INTO streams (stream_id, version) VALUES ('task:t1', 1)");
      await old.query('BEGIN');
      await old.query("SELECT rl_task_complete_all(ARRAY['t1'], ARRAY['a'], '[null]')");
      await old.query(
        "SELECT * FROM rl_event_append(NULL, ARRAY['task:t1'], ARRAY[1]::bigint[], '{}', '{}', '{}', ARRAY['task:t1'], ARRAY[1]::bigint[], ARRAY['task.completed'], '[{\"by\": \"old\"}]', '[{}]')",
      );
      await old.query('COMMIT');
    } finally {
      await old.end();
    }
    expect((await store.eventReadStream({ streamId: 'task:t1' })).map((e) => [e.version, e.type, e.data])).toEqual([
      [1, 'task.enqueued', expect.objectContaining({ state: 'ready' })],
      [2, 'task.completed', { by: 'old' }],
    ]);
    expect((await store.taskGet({ id: 't1' })).state).toBe('completed');
  });
});
