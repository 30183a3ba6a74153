import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

const child = (...args: string[]) => runScript('e2e/crash-child.ts', ...args);

function integrityCheck(backend: string, database: string): void {
  if (backend !== 'sqlite') return;
  const db = new Database(database, { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  } finally {
    db.close();
  }
}

describe.each(backends)('crashes on $name', (backend) => {
  it.each([
    ['journal:beforeCommit', 5, 50],
    ['journal:afterCommit', 5, 60],
  ])('a process killed at %s during batch %i leaves whole batches only', async (point, after, expected) => {
    const database = await backend.create();
    const killed = await child('append', database, point, String(after));
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    integrityCheck(backend.name, database);
    const engine = await createEngine({ database });
    try {
      const events = await engine.journal.readStream('batch');
      expect(events).toHaveLength(expected);
      expect(events.map((e) => e.version)).toEqual(Array.from({ length: expected }, (_, i) => i + 1));
      expect(await engine.store.projectionGet({ name: 'count', key: 'batch' })).toBe(expected);
    } finally {
      await engine.close();
    }
    const finished = await child('append', database);
    expect(finished.code, finished.stderr).toBe(0);
  });

  it.each([['task:beforeComplete'], ['task:afterComplete']])(
    'a worker killed at %s loses no task and completes none twice',
    async (point) => {
      const database = await backend.create();
      const setup = await createEngine({ database });
      const ids = (
        await setup.queue.enqueueMany(
          'jobs',
          Array.from({ length: 200 }, (_, n) => ({ payload: { n } })),
        )
      ).map((r) => r.task.id);
      await setup.close();

      const killed = await child('drain', database, point, '3');
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      integrityCheck(backend.name, database);
      const recovered = await child('drain', database);
      expect(recovered.code, recovered.stderr).toBe(0);

      const engine = await createEngine({ database });
      try {
        const tasks = await engine.queue.list({ queue: 'jobs', limit: 1000 });
        expect(tasks.map((t) => t.state)).toEqual(ids.map(() => 'completed'));
        for (const task of tasks) expect(task.result).toEqual({ double: (task.payload as { n: number }).n * 2 });
        const completions = await engine.journal.readAll({ types: ['task.completed'], limit: 10_000 });
        expect(completions).toHaveLength(200);
        expect(new Set(completions.map((e) => e.streamId)).size).toBe(200);
        // killed before the commit, the batch in hand was never completed: its leases had to expire
        const expired = await engine.journal.readAll({ types: ['task.lease_expired'], limit: 10_000 });
        if (point === 'task:beforeComplete') expect(expired.length).toBeGreaterThan(0);
      } finally {
        await engine.close();
      }
    },
  );
});
