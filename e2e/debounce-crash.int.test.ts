import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { backends } from '../src/testing/backends.js';
import { debouncedEcho } from './debounce-workflows.js';
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
});
