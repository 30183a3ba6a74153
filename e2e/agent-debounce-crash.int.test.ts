import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { arrival, debounceLedger } from './agent-debounce-agents.js';
import { startWorker } from './fault-worker.js';

describe.each(backends)("an agent conversation's debounce window across a kill -9 on $name", (backend) => {
  it('keeps the window of a killed process: the next arrival joins it, and its run runs once with every arrival', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-agent-debounce-')), 'log');
    writeFileSync(log, '');
    const child = startWorker(database, log, undefined, 'e2e/agent-debounce-child.ts');
    await child.ready;
    const exit = await child.kill();
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const engine = await createEngine({ database, pollMs: 100, leaseMs: 1000 });
    const ledger = debounceLedger(engine, log);
    try {
      const opened = (await ledger.events({ conversation_id: 'c' })).items;
      expect(opened).toHaveLength(4);
      const runId = opened[0]!.run_id;
      expect(new Set(opened.map((e) => e.run_id))).toEqual(new Set([runId]));
      // within the killed process's window (4 s): this arrival joins its run
      const fifth = await ledger.intake(arrival('5'));
      expect(fifth).toMatchObject({ run_id: runId, decision: 'coalesced', duplicate: false });
      // a repeated delivery of a message the killed process received is a duplicate, not a sixth arrival
      expect(await ledger.intake(arrival('2'))).toMatchObject({ run_id: runId, duplicate: true });
      const done = await eventually(async () => {
        const run = await ledger.run(runId);
        return run.status === 'success' ? run : undefined;
      }, 30_000);
      expect(done.events.map((e) => (e.payload as { text: string }).text)).toEqual(['1', '2', '3', '4', '5']);
      // one run, once, in this process (the killed one never began it: its pass was parked)
      expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([`${runId} 1,2,3,4,5 ${process.pid}`]);
      // the session ended with the background; the run ends right after
      await engine.runtime.handle(runId).result({ pollMs: 100 });
      const events = await engine.journal.readStream(`run:${runId}`);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      expect(events.filter((e) => e.type === RUN_EVENT.runDebounced)).toHaveLength(5);
      // the window closed: the next arrival is a new run
      const next = await ledger.intake(arrival('6'));
      expect(next).toMatchObject({ decision: 'queued' });
      expect(next.run_id).not.toBe(runId);
    } finally {
      await child.kill();
      await engine.close();
    }
  }, 60_000);
});
