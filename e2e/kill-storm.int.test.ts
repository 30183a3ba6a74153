import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine } from '../src/engine.js';
import { RUN_QUEUE } from '../src/runtime/runtime.js';
import { backends } from '../src/testing/backends.js';
import { allEnded, tally } from './fault-runs.js';
import { faultWorkflows, logLines } from './fault-workflows.js';
import { startWorker, type WorkerProcess } from './fault-worker.js';

/**
 * Runs per backend. Measured on a loaded 2-core machine, 200 runs took 8–11 s of storm on SQLite
 * but 24–57 s on PostgreSQL (one run past the 50 s budget), so PostgreSQL gets 100.
 */
const RUNS = { sqlite: 200, postgres: 100 };

describe.each(backends)('a kill storm on $name', (backend) => {
  it(`finishes ${RUNS[backend.name]} five-step runs while their worker is SIGKILLed every 1–2 s`, async () => {
    const runs = RUNS[backend.name];
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-storm-')), 'log');
    writeFileSync(log, '');
    const { five } = faultWorkflows(log);
    const engine = await createEngine({ database, workflows: [five], workers: false });
    const ids = Array.from({ length: runs }, (_, n) => `k-${n}`);
    const unexpectedExits: string[] = [];
    let worker: WorkerProcess | null = null;
    let kills = 0;
    try {
      for (const [n, id] of ids.entries()) await engine.start(five, { n }, { id });
      const deadline = Date.now() + 50_000;
      while (Date.now() < deadline && !(await allEnded(engine, ids))) {
        worker = startWorker(database, log);
        // the 1–2 s count from when the worker is up: a start-up takes about as long under load
        await worker.ready;
        const exit = await Promise.race([worker.exited, sleep(1000 + Math.random() * 1000, null)]);
        if (exit)
          unexpectedExits.push(`worker ${worker.pid} exited on its own (${exit.code ?? exit.signal}): ${exit.stderr}`);
        await worker.kill();
        worker = null;
        kills += 1;
      }
      expect(unexpectedExits).toEqual([]);
      // a run's pass is a task of RUN_QUEUE: a dead one leaves its run unfinished for good
      const dead = await engine.queue.dead({ queue: RUN_QUEUE, limit: 1000 });
      expect(
        dead.map(
          (t) =>
            `${(t.payload as { runId: string }).runId}: ${t.lastError} (attempt ${t.attempts} of ${t.maxAttempts})`,
        ),
      ).toEqual([]);
      expect(await tally(engine, ids)).toEqual({ success: runs });

      const executions = new Map<string, number>();
      for (const [runId, step] of logLines(readFileSync(log, 'utf8')))
        executions.set(`${runId} ${step}`, (executions.get(`${runId} ${step}`) ?? 0) + 1);
      let reExecuted = 0;
      for (const [n, id] of ids.entries()) {
        expect(await engine.run(id)).toMatchObject({ status: 'success', output: n + 15 });
        const events = await engine.journal.readStream(`run:${id}`);
        for (let i = 1; i <= 5; i++) {
          const ofStep = events.filter((e) => (e.data as { name?: string }).name === `add-${i}`);
          expect(
            ofStep.filter((e) => e.type === 'step.completed'),
            `${id} add-${i}`,
          ).toHaveLength(1);
          // a kill before a step's completion is journaled runs it again; a journaled completion never runs again
          const executed = executions.get(`${id} add-${i}`) ?? 0;
          expect(executed, `${id} add-${i}`).toBeGreaterThanOrEqual(1);
          expect(executed, `${id} add-${i}`).toBeLessThanOrEqual(
            ofStep.filter((e) => e.type === 'step.started').length,
          );
          expect(ofStep.at(-1)?.type, `${id} add-${i}`).toBe('step.completed');
          reExecuted += executed - 1;
        }
      }
      const passes = await engine.queue.list({ queue: RUN_QUEUE, limit: 1000 });
      const claims = Math.max(...passes.map((t) => t.attempts));
      console.log(
        `${backend.name}: ${kills} kills, ${runs * 5} steps, ${reExecuted} re-executed; a run's pass was claimed up to ${claims} times`,
      );
    } finally {
      await worker?.kill();
      await engine.close();
    }
  }, 90_000);
});
