import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { isTerminalEvent, RUN_EVENT } from '../src/runtime/events.js';
import { runStream } from '../src/runtime/pass/history.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { startWorker, type WorkerProcess } from './fault-worker.js';
import { limited } from './limits-workflows.js';

const postgres = backends.find((b) => b.name === 'postgres')!;
const KEYS = ['a', 'b', 'c'];
const RUNS = 30;

/**
 * Keyed concurrency across processes and a kill -9: three worker processes on one PostgreSQL database run 30 runs
 * under `{ key: 'input.k', limit: 2 }` over three keys; one is killed mid-way and a new one started. Read from the
 * journal afterwards: per key, never more than 2 runs between their first step's start and their end (journal
 * positions order them: a run let in by another's end starts after that end committed), and each run completed once.
 */
describe('keyed concurrency across worker processes and a kill -9 on postgres', () => {
  it('never has more than the limit of a key in flight, and completes every run exactly once', async () => {
    const database = await postgres.create();
    const workers: WorkerProcess[] = [];
    const engine = await createEngine({ database, workflows: [limited], workers: false, pollMs: 100 });
    try {
      for (let i = 0; i < 3; i++) workers.push(startWorker(database, '', undefined, 'e2e/limits-child.ts'));
      await Promise.all(workers.map((w) => w.ready));
      const ids: string[] = [];
      for (let n = 0; n < RUNS; n++) ids.push((await engine.start(limited, { k: KEYS[n % 3]!, n })).id);
      const done = async () => {
        let count = 0;
        for (const id of ids) if ((await engine.run(id)).status === 'success') count += 1;
        return count;
      };
      await eventually(async () => (await done()) >= 8, 30_000);
      const exit = await workers[0]!.kill();
      expect(exit.signal).toBe('SIGKILL');
      const fresh = startWorker(database, '', undefined, 'e2e/limits-child.ts');
      workers.push(fresh);
      await fresh.ready;
      await eventually(async () => (await done()) === RUNS, 60_000);

      const intervals = new Map<string, Array<{ from: number; to: number }>>();
      for (const [n, id] of ids.entries()) {
        const events = await engine.journal.readStream(runStream(id));
        const first = events.find((e) => e.type === RUN_EVENT.stepStarted)!;
        const ends = events.filter((e) => isTerminalEvent(e.type));
        expect(ends.map((e) => e.type)).toEqual([RUN_EVENT.runCompleted]);
        expect(ends[0]!.data).toEqual({ output: n });
        const key = KEYS[n % 3]!;
        intervals.set(key, [...(intervals.get(key) ?? []), { from: first.position, to: ends[0]!.position }]);
      }
      for (const [key, list] of intervals) {
        const moments = list.flatMap((i) => [
          { at: i.from, step: 1 },
          { at: i.to, step: -1 },
        ]);
        moments.sort((x, y) => x.at - y.at);
        let now = 0;
        let most = 0;
        for (const m of moments) {
          now += m.step;
          most = Math.max(most, now);
        }
        expect({ key, most }).toEqual({ key, most: 2 });
      }
    } finally {
      for (const w of workers) await w.kill();
      await engine.close();
    }
  }, 90_000);
});
