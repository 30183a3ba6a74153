import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../config.js';
import { Engine } from '../engine.js';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import { backends, type Backend } from '../testing/backends.js';
import { workflow } from './workflow.js';

/** What each driver throws when the database goes from under a statement: pg's for a connection that ended, better-sqlite3's for a lock another process holds. */
const lostConnection = (backend: Backend['name']): Error =>
  backend === 'postgres'
    ? new Error('Connection terminated unexpectedly')
    : new Database.SqliteError('database is locked', 'SQLITE_BUSY');

/**
 * The store, every call of which fails as its driver does while `down` is set: the database gone for a moment. Its
 * listeners and its closing are spared (a connection for notifications comes back by itself; the test must end).
 */
function blipStore(store: Store, fault: () => Error): Store & { down: boolean } {
  const state = { down: false };
  const spared = new Set<PropertyKey>(['listen', 'close', 'dialect']);
  return new Proxy(store as Store & { down: boolean }, {
    get(target, key) {
      if (key === 'down') return state.down;
      const value = Reflect.get(target, key);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) =>
        state.down && !spared.has(key) ? Promise.reject(fault()) : value.apply(target, args);
    },
    set(target, key, value, receiver) {
      if (key !== 'down') return Reflect.set(target, key, value, receiver);
      state.down = value;
      return true;
    },
  });
}

const BACKLOG = 8;

describe.each(backends)('a run the database interrupted on $name', (backend) => {
  const engines: Engine[] = [];
  let open = () => {};
  afterEach(async () => {
    open();
    for (const engine of engines.splice(0).reverse()) await engine.close();
  });

  it('is claimed again in its old place, before runs started after it', async () => {
    const database = await backend.create();
    const store = blipStore(await openStore(database), () => lostConnection(backend.name));
    const passes: string[] = [];
    const gate = new Promise<void>((resolve) => (open = resolve));
    const interrupted = workflow('interrupted', async (ctx) =>
      ctx.step('work', async () => {
        passes.push('interrupted');
        await gate;
        // the database goes away as the step ends, for 300 ms: its completion cannot be written, the pass fails
        if (passes.length === 1) {
          store.down = true;
          setTimeout(() => (store.down = false), 300);
        }
        return 'done';
      }),
    );
    const backlog = workflow('backlog', async (ctx, n: number) =>
      ctx.step('work', async () => (passes.push(`backlog-${n}`), n)),
    );
    // one pass at a time, and no poll: only the interrupted pass's failure makes the worker claim again
    const engine = new Engine(resolveConfig({ database, runConcurrency: 1, pollMs: 60_000 }), store, [interrupted]);
    // another process, with no run worker, starts the newer runs
    const starter = new Engine(resolveConfig({ database }), await openStore(database), [backlog], false);
    engines.push(engine, starter);
    const run = await engine.start(interrupted, null, { id: 'interrupted' });
    while (passes.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    // newer runs, ready while the first one works; of a workflow this worker takes only from now on, so none is claimed (and held) before its failure
    const started = [];
    for (let n = 0; n < BACKLOG; n++) started.push(await starter.start(backlog, n, { id: `backlog-${n}` }));
    engine.register(backlog);
    open();
    // read through the other process: this one's store is down for a moment
    expect(await starter.runtime.handle(run.id).result()).toBe('done');
    for (const [n, r] of started.entries()) expect(await r.result()).toBe(n);
    expect(passes).toEqual(['interrupted', 'interrupted', ...started.map((r) => r.id)]);
  });
});
