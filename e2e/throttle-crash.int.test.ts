import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { startWorker } from './fault-worker.js';
import { throttledEcho } from './throttle-workflows.js';

describe.each(backends)('throttled starts across a kill -9 on $name', (backend) => {
  it("keeps the killed process's slots: every run runs, none before its slot, no two slots closer than period / limit", async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-throttle-')), 'log');
    writeFileSync(log, '');
    const lines = () => readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);
    const child = startWorker(database, log, undefined, 'e2e/throttle-child.ts');
    await child.ready;
    // killed while its key is mid-way: two runs ran, four wait for their slots (the last 5 s after the first)
    await eventually(async () => lines().filter((l) => l.startsWith('ran ')).length >= 2, 10_000);
    const exit = await child.kill();
    expect(exit.signal, exit.stderr).toBe('SIGKILL');
    const fromChild = lines()
      .filter((l) => l.startsWith('started '))
      .map((l) => l.split(' ')[1]!);
    expect(fromChild).toHaveLength(6);

    const echo = throttledEcho(log);
    const engine = await createEngine({ database, workflows: [echo], pollMs: 100, leaseMs: 1000 });
    try {
      const fromParent = [];
      for (let n = 7; n <= 9; n++) fromParent.push((await engine.start(echo, { user: 'u', n })).id);
      const ids = [...fromChild, ...fromParent];
      // never dropped: every start's run completes, once
      const results = await Promise.all(ids.map((id) => engine.runtime.handle(id).result({ pollMs: 100 })));
      expect(results).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      const runs = await Promise.all(
        ids.map(async (id) => {
          const events = await engine.journal.readStream(`run:${id}`);
          expect(events.filter((e) => e.type === RUN_EVENT.runCompleted)).toHaveLength(1);
          const slots = events.filter((e) => e.type === RUN_EVENT.runThrottled);
          expect(slots).toHaveLength(1);
          const began = events.find((e) => e.type === RUN_EVENT.stepStarted)!;
          return { id, slot: (slots[0]!.data as { until: number }).until, began: began.timestamp };
        }),
      );
      // no run began before its slot, a pass of the killed process or of this one
      for (const run of runs) expect(run.began).toBeGreaterThanOrEqual(run.slot);
      // the slots taken before the kill held: this process's starts took the ones after them, a second apart, so no
      // 2 s ever holds more than 2 of the key's slots
      const slots = runs.map((r) => r.slot);
      for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(1_000);
      // every execution of a step is a step the journal began (a run the kill cut short ran again, as attempt 2)
      const ran = lines().filter((l) => l.startsWith('ran '));
      const started = await Promise.all(
        ids.map(
          async (id) =>
            (await engine.journal.readStream(`run:${id}`)).filter((e) => e.type === RUN_EVENT.stepStarted).length,
        ),
      );
      expect(ran.length).toBe(started.reduce((a, b) => a + b, 0));
      for (const id of ids) expect(ran.filter((l) => l.split(' ')[1] === id).length).toBeGreaterThanOrEqual(1);
    } finally {
      await child.kill();
      await engine.close();
    }
  }, 60_000);
});
