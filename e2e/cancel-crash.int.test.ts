import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/engine.js';
import { isTerminal, type RunView } from '../src/runtime/read/view.js';
import { backends } from '../src/testing/backends.js';
import { tally, waitForRuns } from './fault-runs.js';
import { faultWorkflows, logLines } from './fault-workflows.js';
import { startWorker, type WorkerProcess } from './fault-worker.js';

const PER_PHASE = 25;

/** The run has started its `hold` step and not finished it. */
const holding = (run: RunView) => run.steps[1]?.status === 'running';
const ended = (run: RunView) => isTerminal(run.status);

describe.each(backends)('cancellation of runs mid-step on $name', (backend) => {
  it(`cancels ${2 * PER_PHASE} runs and compensates each once, with and without a worker killed right after the cancel`, async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-cancel-')), 'log');
    writeFileSync(log, '');
    const { hold } = faultWorkflows(log);
    const engine = await createEngine({ database, workflows: [hold], workers: false });
    const phaseA = Array.from({ length: PER_PHASE }, (_, n) => `a-${n}`);
    const phaseB = Array.from({ length: PER_PHASE }, (_, n) => `b-${n}`);
    // one worker holds every run of a phase at once
    let worker: WorkerProcess | null = startWorker(database, log, 2 * PER_PHASE);
    try {
      await worker.ready;
      // A: the worker that runs the steps sees the cancellation
      for (const id of phaseA) await engine.start(hold, {}, { id });
      await waitForRuns(engine, phaseA, holding, 'mid-step', 20_000);
      for (const id of phaseA) await engine.cancel(id);
      const cancelledAt = Date.now();
      // the hold step ends on its own after 30 s: a cancellation that never arrives shows as 'success'
      await waitForRuns(engine, phaseA, ended, 'ended', 40_000);
      const phaseAEndedInMs = Date.now() - cancelledAt;

      // B: the worker dies right after the cancellation; another one finishes the runs
      for (const id of phaseB) await engine.start(hold, {}, { id });
      await waitForRuns(engine, phaseB, holding, 'mid-step', 20_000);
      for (const id of phaseB) await engine.cancel(id);
      const exit = await worker.kill();
      expect(exit.signal, exit.stderr).toBe('SIGKILL');
      worker = startWorker(database, log, 2 * PER_PHASE);
      await waitForRuns(engine, phaseB, ended, 'ended', 20_000);
      await worker.kill();
      worker = null;

      expect({ A: await tally(engine, phaseA), B: await tally(engine, phaseB) }).toEqual({
        A: { cancelled: PER_PHASE },
        B: { cancelled: PER_PHASE },
      });

      const compensated = logLines(readFileSync(log, 'utf8')).filter(([, what]) => what === 'compensated');
      let reRun = 0;
      for (const id of [...phaseA, ...phaseB]) {
        const events = await engine.journal.readStream(`run:${id}`);
        expect(
          events.filter((e) => e.type === 'compensation.completed'),
          id,
        ).toHaveLength(1);
        expect(events.at(-1)?.type, id).toBe('run.cancelled');
        // a compensation runs again only after a journaled start whose end was never journaled: its
        // worker died, or lost the run's lease (under load a 1 s lease can lapse) and was fenced off
        const runs = compensated.filter(([runId]) => runId === id);
        const started = events.filter((e) => e.type === 'compensation.started').length;
        expect(runs.length, id).toBeGreaterThanOrEqual(1);
        expect(runs.length, id).toBeLessThanOrEqual(started);
        reRun += runs.length - 1;
      }
      console.log(
        `${backend.name}: ${2 * PER_PHASE} runs cancelled, ${reRun} compensations run again after the kill; phase A ended ${phaseAEndedInMs} ms after its cancellations`,
      );
      // the running step's signal fires on cancellation: the runs do not wait out their 30 s step
      expect(phaseAEndedInMs).toBeLessThan(10_000);
    } finally {
      await worker?.kill();
      await engine.close();
    }
  }, 90_000);
});
