import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../src/engine.js';
import { RUN_QUEUE } from '../src/runtime/runtime.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { relay } from './cache-workflows.js';
import { node, type Cli } from './child.js';

async function worker(database: string): Promise<Cli> {
  const w = node(['--import', 'tsx', 'e2e/cache-child.ts', database]);
  await eventually(() => w.output().includes('ready\n'), 20_000).catch(() => {
    throw new Error(`worker did not start: ${w.output()}`);
  });
  return w;
}

async function stats(w: Cli): Promise<{ hits: number; misses: number }> {
  const seen = w.output().split('stats ').length;
  w.proc.kill('SIGUSR2');
  await eventually(() => w.output().split('stats ').length > seen, 5000);
  const [hits, misses] = w.output().split('stats ').at(-1)!.split('\n')[0]!.split(' ').map(Number);
  return { hits: hits!, misses: misses! };
}

/**
 * SIGSTOPs a worker, but never while it holds SQLite's write lock (its heartbeat writes every
 * second): a process frozen inside a transaction would block every other writer of the file.
 */
async function freeze(w: Cli, database: string): Promise<void> {
  for (;;) {
    w.proc.kill('SIGSTOP');
    if (/^postgres(ql)?:/.test(database)) return;
    const probe = new Database(database, { timeout: 200 });
    try {
      probe.exec('BEGIN IMMEDIATE; ROLLBACK');
      return;
    } catch {
      w.proc.kill('SIGCONT');
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      probe.close();
    }
  }
}

/** Signals round `i` and waits until its step is done and the pass that ran it has let go of the run. */
async function round(engine: Engine, i: number): Promise<void> {
  await engine.signal('relay-1', 'next', i + 1);
  await eventually(
    async () => (await engine.run('relay-1')).steps.some((s) => s.name === `round-${i}` && s.status === 'success'),
    15_000,
  );
  await eventually(
    async () =>
      !(await engine.queue.list({ queue: RUN_QUEUE, state: 'running', limit: 100 })).some(
        (t) => t.orderingKey === 'relay-1',
      ),
    15_000,
  );
}

describe.each(backends)('the replay cache across worker processes on $name', (backend) => {
  it('a worker whose cached history went stale (another worker ran the run meanwhile) reads what it missed and goes on correctly', async () => {
    const database = await backend.create();
    const engine = await createEngine({ database, workflows: [relay], workers: false });
    const a = await worker(database);
    const b = await worker(database);
    try {
      // B frozen: A runs rounds 0 and 1, and keeps the run's history in its cache
      await freeze(b, database);
      const run = await engine.start(relay, { rounds: 6 }, { id: 'relay-1' });
      await round(engine, 0);
      await round(engine, 1);
      // A frozen with its cache: B runs rounds 2 and 3
      await freeze(a, database);
      b.proc.kill('SIGCONT');
      await round(engine, 2);
      await round(engine, 3);
      // A again: its cache lacks B's events
      await freeze(b, database);
      a.proc.kill('SIGCONT');
      await round(engine, 4);
      await round(engine, 5);
      const out = (await run.result()) as { sum: number; pids: number[] };
      expect(out.sum).toBe(1 + 2 + 3 + 4 + 5 + 6);
      const [pa, pb] = [a.proc.pid, b.proc.pid];
      expect(out.pids).toEqual([pa, pa, pb, pb, pa, pa]);
      const types = (await engine.journal.readStream('run:relay-1')).map((e) => e.type);
      expect(types.filter((t) => t === 'step.completed')).toHaveLength(6);
      expect(types).not.toContain('run.failed');
      // A served its later passes from the cache, including the ones after B's
      const fromA = await stats(a);
      expect(fromA.hits).toBeGreaterThanOrEqual(3);
    } finally {
      b.proc.kill('SIGCONT');
      for (const w of [a, b]) {
        w.proc.kill('SIGTERM');
        await w.exited;
      }
      await engine.close();
    }
  }, 120_000);
});
