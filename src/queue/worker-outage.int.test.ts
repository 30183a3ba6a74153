import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../config.js';
import { Engine } from '../engine.js';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';

/** What a PostgreSQL client throws while the server is away. */
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

/** The store, with every transaction refused while `down` is set: the database gone for a moment. */
function outageStore(store: Store): Store & { down: boolean } {
  const wrapped = Object.create(store) as Store & { down: boolean };
  wrapped.down = false;
  wrapped.transaction = (fn) => (wrapped.down ? Promise.reject(refused()) : store.transaction(fn));
  return wrapped;
}

// A lease far longer than the test may wait: the task must move because the database came back, not because a lease ran out.
const LEASE_MS = 60_000;

describe.each(backends)('a worker when the database goes away on $name', (backend) => {
  let engine: Engine | undefined;
  afterEach(() => engine?.close());

  const open = async () => {
    const database = await backend.create();
    const store = outageStore(await openStore(database));
    engine = new Engine(resolveConfig({ database, leaseMs: LEASE_MS, pollMs: 100 }), store);
    return { engine, store };
  };

  it('commits a finished task within a second of the database coming back, not a lease later', async () => {
    const { engine, store } = await open();
    const { task } = await engine.queue.enqueue('email', { to: 'a@b.c' });
    engine.work('email', async () => {
      store.down = true;
      setTimeout(() => (store.down = false), 500);
      return { sent: true };
    });
    const done = await eventually(async () => {
      const t = await engine.queue.get(task.id);
      return t.state === 'completed' ? t : undefined;
    }, 5000);
    expect(done).toMatchObject({ attempts: 1, result: { sent: true } });
  });

  it('records a failed attempt once the database is back, and retries a task the outage failed without a longer backoff', async () => {
    const { engine, store } = await open();
    const { task } = await engine.queue.enqueue('email', {}, { maxAttempts: 5 });
    const attempts: number[] = [];
    // a second attempt's backoff is 100 s; an outage's is the first one's, 100 ms
    const backoff = { baseMs: 100, factor: 1000, maxMs: 600_000, jitter: 0 };
    engine.work(
      'email',
      async (_payload, { attempt }) => {
        attempts.push(attempt);
        if (attempt === 1) throw new Error('the handler failed on its own');
        if (attempt === 2) {
          store.down = true;
          setTimeout(() => (store.down = false), 500);
          throw refused();
        }
        return 'ok';
      },
      { backoff },
    );
    await eventually(async () => attempts.length >= 2, 5000);
    // the first failure backs off by 100 ms; the outage's failure, committed after it, by 100 ms again
    const done = await eventually(async () => {
      const t = await engine.queue.get(task.id);
      return t.state === 'completed' ? t : undefined;
    }, 5000);
    expect(done.attempts).toBe(3);
    expect(attempts).toEqual([1, 2, 3]);
  });
});

describe.each(backends)('the place of a failed task on $name', (backend) => {
  let engine: Engine | undefined;
  afterEach(() => engine?.close());

  /**
   * Runs task `first` once, which enqueues four newer tasks and then fails by `failing`; returns the order the
   * handler saw them in. One slot, nothing prefetched: the order is the claims'. A backoff of a second: a task
   * that backs off comes after the newer ones, which take milliseconds.
   */
  const order = async (failing: (store: Store & { down: boolean }) => Error, o: { olderMs?: number } = {}) => {
    const database = await backend.create();
    const store = outageStore(await openStore(database));
    engine = new Engine(resolveConfig({ database, leaseMs: LEASE_MS, pollMs: 100 }), store);
    const e = engine;
    await e.queue.enqueue('jobs', { name: 'first' });
    const seen: string[] = [];
    const backoff = { baseMs: 1000, factor: 1, maxMs: 1000, jitter: 0 };
    e.work(
      'jobs',
      async ({ name }: { name: string }) => {
        seen.push(name);
        if (name !== 'first' || seen.length > 1) return null;
        for (let n = 0; n < 4; n++)
          await e.queue.enqueue(
            'jobs',
            { name: `${o.olderMs === undefined ? 'newer' : 'older'}-${n}` },
            o.olderMs === undefined ? {} : { runAt: Date.now() - o.olderMs },
          );
        throw failing(store);
      },
      { concurrency: 1, prefetch: 0, backoff },
    );
    await eventually(async () => seen.length === 6, 5000);
    return seen;
  };

  it('goes back in its old place, ahead of newer tasks, when the database cut its attempt short', async () => {
    const seen = await order((store) => {
      store.down = true;
      setTimeout(() => (store.down = false), 300);
      return refused();
    });
    expect(seen).toEqual(['first', 'first', 'newer-0', 'newer-1', 'newer-2', 'newer-3']);
  });

  // Tasks due before it that still wait (another process started it first, or a priority) are behind it too: it was
  // running, they were waiting. Before, it went back at its run-at and waited behind a backlog due before it.
  it('goes back ahead of tasks due before it that were waiting when the database cut its attempt short', async () => {
    const seen = await order(
      (store) => {
        store.down = true;
        setTimeout(() => (store.down = false), 300);
        return refused();
      },
      { olderMs: 60_000 },
    );
    expect(seen).toEqual(['first', 'first', 'older-0', 'older-1', 'older-2', 'older-3']);
  });

  it('backs off behind newer tasks when it failed on its own', async () => {
    const seen = await order(() => new Error('the handler failed on its own'));
    expect(seen).toEqual(['first', 'newer-0', 'newer-1', 'newer-2', 'newer-3', 'first']);
  });
});
