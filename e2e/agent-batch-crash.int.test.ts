import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { BATCH_QUEUE } from '../src/runtime/start/batch.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { arrival, batchLedger } from './agent-batch-agents.js';
import { runScript } from './child.js';
import { startWorker } from './fault-worker.js';

const numbers = (from: number, count: number) => Array.from({ length: count }, (_, i) => String(from + i));
const texts = (run: { events: Array<{ payload: unknown }> }) =>
  run.events.map((e) => (e.payload as { text: string }).text);

describe.each(backends)("an agent's batch of intake events across a kill -9 on $name", (backend) => {
  it('keeps the batch of a killed process: arrivals in the next fill it, its run runs once with every event', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-agent-batch-')), 'log');
    writeFileSync(log, '');
    const child = startWorker(database, log, undefined, 'e2e/agent-batch-child.ts');
    await child.ready;
    const exit = await child.kill();
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const engine = await createEngine({ database, pollMs: 100, leaseMs: 1000 });
    const ledger = batchLedger(engine, log);
    try {
      const opened = (await ledger.events({ conversation_id: 'c' })).items;
      expect(opened).toHaveLength(5);
      const runId = opened[0]!.run_id;
      expect(new Set(opened.map((e) => e.run_id))).toEqual(new Set([runId]));
      // a repeated delivery of a message the killed process received is a duplicate, not an arrival
      expect(await ledger.intake(arrival('2'))).toMatchObject({ run_id: runId, duplicate: true });
      // these five fill the killed process's batch (10): its run begins at once, not at its timeout 30 s out
      const later = [];
      for (const text of numbers(6, 5)) later.push(await ledger.intake(arrival(text)));
      expect(later.map((r) => [r.run_id, r.decision])).toEqual(later.map(() => [runId, 'coalesced']));
      const done = await eventually(async () => {
        const run = await ledger.run(runId);
        return run.status === 'success' ? run : undefined;
      }, 20_000);
      expect(texts(done)).toEqual(numbers(1, 10));
      // one run, once, in this process (the killed one never began it: its pass was parked)
      expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
        `${runId} ${numbers(1, 10).join(',')} ${process.pid}`,
      ]);
      await engine.runtime.handle(runId).result({ pollMs: 100 });
      const events = await engine.journal.readStream(`run:${runId}`);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      expect(events.filter((e) => e.type === RUN_EVENT.runBatched)).toHaveLength(10);
      // the batch closed when full: the next arrival is a new run
      const next = await ledger.intake(arrival('11'));
      expect(next).toMatchObject({ decision: 'queued' });
      expect(next.run_id).not.toBe(runId);
    } finally {
      await child.kill();
      await engine.close();
    }
  }, 60_000);

  it('starts the run once when the process dies after its timer closed the batch, before the task completed', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-agent-batch-')), 'log');
    writeFileSync(log, '');
    // a 1 s timeout, and the child's death at its first task's completion: the timer's, its batch closed
    const exit = await runScript('e2e/agent-batch-child.ts', database, log, '1s');
    expect(exit.signal, exit.stderr).toBe('SIGKILL');

    const engine = await createEngine({ database, pollMs: 100, leaseMs: 1000 });
    const ledger = batchLedger(engine, log, '1s');
    try {
      const [first] = (await ledger.events({ conversation_id: 'c' })).items;
      const runId = first!.run_id;
      const done = await eventually(async () => {
        const run = await ledger.run(runId);
        return run.status === 'success' ? run : undefined;
      }, 20_000);
      expect(texts(done)).toEqual(['1', '2', '3']);
      // the timer's task never completed: it runs again here, finds the batch closed and changes nothing
      const [timer] = await eventually(async () => {
        const tasks = await engine.queue.list({ queue: BATCH_QUEUE });
        return tasks.length === 1 && tasks[0]!.state === 'completed' && tasks;
      });
      expect(timer!.attempts).toBe(2);
      const key = await engine.journal.readStream('batching:agent:digest:conversation_id=c');
      expect(key.filter((e) => e.type === RUN_EVENT.batchingDue)).toHaveLength(1);
      await engine.runtime.handle(runId).result({ pollMs: 100 });
      const events = await engine.journal.readStream(`run:${runId}`);
      expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
      // every line names the one run and its three events (a pass the kill interrupted may have written one too)
      for (const line of readFileSync(log, 'utf8').trim().split('\n')) expect(line).toMatch(`${runId} 1,2,3 `);
      expect((await ledger.intake(arrival('4'))).run_id).not.toBe(runId);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
