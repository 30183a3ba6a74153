import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { DEBOUNCE_QUEUE } from '../src/runtime/start/debounce.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { debouncedEcho } from './debounce-workflows.js';
import { runScript } from './child.js';
import { startWorker } from './fault-worker.js';

describe.each(backends)('a debounce window across a kill -9 on $name', (backend) => {
  it('keeps the window of a killed process: a start in the next process joins it, its timer fires there, the run runs once', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-debounce-')), 'log');
    writeFileSync(log, '');
    const child = startWorker(database, log, undefined, 'e2e/debounce-child.ts');
    await child.ready;
    const exit = await child.kill();
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const echo = debouncedEcho(log);
    const engine = await createEngine({ database, workflows: [echo], pollMs: 100, leaseMs: 1000 });
    try {
      // within the killed process's window (4 s): this start joins its run
      const run = await engine.start(echo, { chat: 'c', n: 6 });
      expect(await run.result({ pollMs: 100 })).toBe(6);
      const events = await engine.journal.readStream(`run:${run.id}`);
      // the window's opening and five later starts: the child's four and this one
      expect(events.filter((e) => e.type === RUN_EVENT.runDebounced)).toHaveLength(6);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      const key = await engine.journal.readStream('debounce:debounce-crash:c');
      expect(key.filter((e) => e.type === RUN_EVENT.debounceStarted)).toHaveLength(6);
      const lines = readFileSync(log, 'utf8').trim().split('\n');
      expect(lines).toEqual([`${run.id} echo 6 ${process.pid}`]);
      // the window closed: the next start is a new run
      const next = await engine.start(echo, { chat: 'c', n: 7 });
      expect(next.id).not.toBe(run.id);
    } finally {
      await child.kill();
      await engine.close();
    }
  }, 30_000);

  it('starts the run once when the process dies after its timer closed the window, before the timer task completed', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-debounce-')), 'log');
    writeFileSync(log, '');
    // a 1 s window, and the child's death at its first task's completion: the timer's, its window closed
    const exit = await runScript('e2e/debounce-child.ts', database, log, '1s');
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const echo = debouncedEcho(log, '1s');
    const engine = await createEngine({ database, workflows: [echo], pollMs: 100, leaseMs: 1000 });
    try {
      const { runs } = await engine.runs.list({ limit: 10 });
      expect(runs).toHaveLength(1);
      const run = engine.runtime.handle(runs[0]!.id);
      expect(await run.result({ pollMs: 100 })).toBe(1);
      // the timer's task never completed: it runs again here, finds the window closed and changes nothing
      const [timer] = await eventually(async () => {
        const tasks = await engine.queue.list({ queue: DEBOUNCE_QUEUE });
        return tasks.length === 1 && tasks[0]!.state === 'completed' && tasks;
      });
      expect(timer!.attempts).toBe(2);
      const key = await engine.journal.readStream('debounce:debounce-crash:c');
      expect(key.filter((e) => e.type === RUN_EVENT.debounceDue)).toHaveLength(1);
      const events = await engine.journal.readStream(`run:${run.id}`);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      // every execution of the step is journaled (a pass the kill interrupted would show as a second start)
      const executions = readFileSync(log, 'utf8').trim().split('\n');
      expect(executions).toHaveLength(events.filter((e) => e.type === RUN_EVENT.stepStarted).length);
      expect((await engine.start(echo, { chat: 'c', n: 6 })).id).not.toBe(run.id);
    } finally {
      await engine.close();
    }
  }, 30_000);
});
