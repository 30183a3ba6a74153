import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { BATCH_QUEUE } from '../src/runtime/start/batch.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { batchedEcho } from './batching-workflows.js';
import { runScript } from './child.js';
import { startWorker } from './fault-worker.js';

const numbers = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe.each(backends)('an open batch across a kill -9 on $name', (backend) => {
  it('keeps the batch of a killed process: starts in the next process fill it, its run runs once with every input', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-batching-')), 'log');
    writeFileSync(log, '');
    const child = startWorker(database, log, undefined, 'e2e/batching-child.ts');
    await child.ready;
    const exit = await child.kill();
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const echo = batchedEcho(log);
    const engine = await createEngine({ database, workflows: [echo], pollMs: 100, leaseMs: 1000 });
    try {
      // the child's five inputs are in the open batch: these five fill it (10), and its run begins at once
      const handles = [];
      for (const n of numbers(6, 5)) handles.push(await engine.start(echo, { n }));
      const run = handles[0]!;
      expect(handles.every((h) => h.id === run.id)).toBe(true);
      expect(await run.result({ pollMs: 100 })).toEqual(numbers(1, 10));
      const events = await engine.journal.readStream(`run:${run.id}`);
      expect(events.filter((e) => e.type === RUN_EVENT.runBatched)).toHaveLength(10);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      const key = await engine.journal.readStream('batching:batching-crash:*');
      expect(key.filter((e) => e.type === RUN_EVENT.batchingStarted)).toHaveLength(10);
      // the step ran once, here: no input lost, none twice
      expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
        `${run.id} echo ${numbers(1, 10).join(',')} ${process.pid}`,
      ]);
      // the batch closed when full: the next start is a new run
      const next = await engine.start(echo, { n: 11 });
      expect(next.id).not.toBe(run.id);
      expect((await engine.runs.list({ limit: 10 })).runs).toHaveLength(2);
    } finally {
      await child.kill();
      await engine.close();
    }
  }, 30_000);

  it('starts the run once when the process dies after its timer closed the batch, before the timer task completed', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-batching-')), 'log');
    writeFileSync(log, '');
    // a 1 s timeout, and the child's death at its first task's completion: the timer's, its batch closed
    const exit = await runScript('e2e/batching-child.ts', database, log, '1s');
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const echo = batchedEcho(log, '1s');
    const engine = await createEngine({ database, workflows: [echo], pollMs: 100, leaseMs: 1000 });
    try {
      const { runs } = await engine.runs.list({ limit: 10 });
      expect(runs).toHaveLength(1);
      const run = engine.runtime.handle(runs[0]!.id);
      expect(await run.result({ pollMs: 100 })).toEqual([1, 2, 3]);
      // the timer's task never completed: it runs again here, finds the batch closed and changes nothing
      const [timer] = await eventually(async () => {
        const tasks = await engine.queue.list({ queue: BATCH_QUEUE });
        return tasks.length === 1 && tasks[0]!.state === 'completed' && tasks;
      });
      expect(timer!.attempts).toBe(2);
      const key = await engine.journal.readStream('batching:batching-crash:*');
      expect(key.filter((e) => e.type === RUN_EVENT.batchingDue)).toHaveLength(1);
      const events = await engine.journal.readStream(`run:${run.id}`);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      // every execution of the step is journaled (a pass the kill interrupted would show as a second start)
      const executions = readFileSync(log, 'utf8').trim().split('\n');
      expect(executions).toHaveLength(events.filter((e) => e.type === RUN_EVENT.stepStarted).length);
      expect((await engine.start(echo, { n: 4 })).id).not.toBe(run.id);
    } finally {
      await engine.close();
    }
  }, 30_000);
});
