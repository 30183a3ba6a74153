import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/engine.js';
import { RUN_QUEUE } from '../src/runtime/runtime.js';
import { backends } from '../src/testing/backends.js';
import { waitForRuns } from './fault-runs.js';
import { faultWorkflows } from './fault-workflows.js';
import { startWorker, type WorkerProcess } from './fault-worker.js';

const KILLS = 5;

describe.each(backends)('a run whose worker keeps dying on $name', (backend) => {
  it(`is taken over again after its worker was killed mid-step ${KILLS} times`, async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-repeat-')), 'log');
    writeFileSync(log, '');
    const { hold } = faultWorkflows(log);
    const engine = await createEngine({ database, workflows: [hold], workers: false });
    let worker: WorkerProcess | null = null;
    try {
      // a 3 s step: each worker is killed while it runs, before it can finish
      await engine.start(hold, { ms: 3000 }, { id: 'h-1' });
      for (let kill = 1; kill <= KILLS; kill++) {
        worker = startWorker(database, log);
        await waitForRuns(
          engine,
          ['h-1'],
          (run) => run.steps[1]?.status === 'running' && run.steps[1].attempts === kill,
          `holding (attempt ${kill})`,
          15_000,
        );
        await worker.kill();
      }
      worker = startWorker(database, log);
      // a run's pass is retried, never dead-lettered (PASS_TASK, src/runtime/runtime.ts): a sixth worker takes the run over
      const takenOver = await waitForRuns(
        engine,
        ['h-1'],
        (run) => run.steps[1]?.attempts === KILLS + 1,
        'taken over',
        10_000,
      ).then(
        () => true,
        () => false,
      );
      const dead = await engine.queue.dead({ queue: RUN_QUEUE });
      expect(dead.map((t) => `${t.attempts} of ${t.maxAttempts} attempts: ${t.lastError}`)).toEqual([]);
      expect(takenOver).toBe(true);
      await waitForRuns(engine, ['h-1'], (run) => run.status === 'success', 'success', 10_000);
      expect(await engine.run('h-1')).toMatchObject({
        output: 'held 3000 ms',
        steps: [{ attempts: 1 }, { attempts: KILLS + 1, status: 'success' }],
      });
    } finally {
      await worker?.kill();
      await engine.close();
    }
  }, 60_000);
});
