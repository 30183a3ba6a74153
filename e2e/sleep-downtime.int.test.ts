import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine } from '../src/engine.js';
import { isTerminal } from '../src/runtime/read/view.js';
import { backends } from '../src/testing/backends.js';
import { waitForRuns } from './fault-runs.js';
import { faultWorkflows, logLines } from './fault-workflows.js';
import { startWorker, type WorkerProcess } from './fault-worker.js';

const RUNS = 100;

describe.each(backends)('durable sleep across downtime on $name', (backend) => {
  it(`wakes each of ${RUNS} runs once, never early, after their worker was killed and nothing ran for 8 s`, async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-sleep-')), 'log');
    writeFileSync(log, '');
    const { nap } = faultWorkflows(log);
    const engine = await createEngine({ database, workflows: [nap], workers: false });
    const ids = Array.from({ length: RUNS }, (_, n) => `s-${n}`);
    let worker: WorkerProcess | null = null;
    try {
      // all started before the worker, so every run is asleep well before the first one is due
      for (const id of ids) await engine.start(nap, {}, { id });
      worker = startWorker(database, log);
      await waitForRuns(engine, ids, (run) => run.status === 'sleeping', 'all asleep', 15_000);
      const killed = await worker.kill();
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      await sleep(8000);
      worker = startWorker(database, log);
      const rescuer = worker.pid;
      await waitForRuns(engine, ids, (run) => isTerminal(run.status), 'ended', 30_000);
      await worker.kill();
      worker = null;

      const wakes = logLines(readFileSync(log, 'utf8')).filter(([, what]) => what === 'woke');
      for (const id of ids) {
        const view = await engine.run(id);
        expect(view.status, id).toBe('success');
        const t0 = view.output as number;
        const events = await engine.journal.readStream(`run:${id}`);
        expect(
          events.filter((e) => e.type === 'sleep.started'),
          id,
        ).toHaveLength(1);
        expect(
          events.filter((e) => e.type === 'sleep.completed'),
          id,
        ).toHaveLength(1);
        expect(
          events.filter((e) => e.type === 'run.completed'),
          id,
        ).toHaveLength(1);
        // the code after the sleep ran in the worker started after the downtime, never before the 5 s were up. It is
        // not a step: a pass that loses its 1 s lease on a loaded machine is run again, and replays it (the journal
        // still holds one sleep.completed and one run.completed, checked above)
        const woke = wakes.filter(([runId]) => runId === id);
        expect(woke.length, id).toBeGreaterThanOrEqual(1);
        expect(new Set(woke.map(([, , , pid]) => Number(pid))), id).toEqual(new Set([rescuer]));
        for (const [, , at] of woke) expect(Number(at) - t0, id).toBeGreaterThanOrEqual(5000);
      }
    } finally {
      await worker?.kill();
      await engine.close();
    }
  }, 60_000);
});
