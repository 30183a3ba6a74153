import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

const child = (...args: string[]) => runScript('e2e/budget-child.ts', ...args);

const RUNS = 10;

describe.each(backends)('usage totals surviving SIGKILL on $name', (backend) => {
  it('counts each usage report and each step once: runs at exactly their budget all succeed', async () => {
    const database = await backend.create();
    // killed as it commits a write: a step or a report may be done again, and must count once
    const killed = await child(database, String(RUNS), 'journal:beforeCommit', '12');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const finished = await child(database, String(RUNS));
    expect(finished.code, finished.stderr).toBe(0);

    const engine = await createEngine({ database });
    try {
      for (let n = 0; n < RUNS; n++) {
        const view = await engine.run(`b-${n}`);
        expect(view, view.error ?? '').toMatchObject({ status: 'success', usage: { tokens: 80, toolCalls: 8 } });
        const reports = (await engine.journal.readStream(`run:b-${n}`)).filter(
          (e) => e.type === RUN_EVENT.usageRecorded,
        );
        expect(reports.map((e) => (e.data as { totals: { tokens: number } }).totals.tokens)).toEqual([
          10, 20, 30, 40, 50, 60, 70, 80,
        ]);
      }
    } finally {
      await engine.close();
    }
  }, 120_000);
});
