import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

const child = (...args: string[]) => runScript('e2e/run-child.ts', ...args);

const RUNS = 20;

describe.each(backends)('runs surviving SIGKILL on $name', (backend) => {
  it('finishes every run with the right result and never runs a recorded step again', async () => {
    const database = await backend.create();
    const log = join(mkdtempSync(join(tmpdir(), 'runledger-runs-')), 'executions.log');
    for (const after of [15, 35, 60]) {
      const killed = await child(database, log, String(RUNS), 'journal:beforeCommit', String(after));
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
    }
    const finished = await child(database, log, String(RUNS));
    expect(finished.code, finished.stderr).toBe(0);

    const engine = await createEngine({ database });
    try {
      const executions = new Map<string, number>();
      for (const line of readFileSync(log, 'utf8').trim().split('\n'))
        executions.set(line, (executions.get(line) ?? 0) + 1);
      let reExecuted = 0;
      for (let n = 0; n < RUNS; n++) {
        const view = await engine.run(`r-${n}`);
        expect(view).toMatchObject({ status: 'success', output: n + 15 });
        const events = await engine.journal.readStream(`run:r-${n}`);
        for (let i = 1; i <= 5; i++) {
          const ofStep = events.filter((e) => (e.data as { name?: string }).name === `add-${i}`);
          expect(ofStep.filter((e) => e.type === 'step.completed')).toHaveLength(1);
          // every execution follows a journaled start (a kill may fall between the start and the
          // execution), and no start follows the completion: a recorded step never ran again
          const runs = executions.get(`r-${n} add-${i}`) ?? 0;
          expect(runs).toBeGreaterThanOrEqual(1);
          expect(runs).toBeLessThanOrEqual(ofStep.filter((e) => e.type === 'step.started').length);
          expect(ofStep.at(-1)?.type).toBe('step.completed');
          reExecuted += runs - 1;
        }
      }
      console.log(`${backend.name}: ${RUNS * 5} steps, ${reExecuted} re-executed after kills`);
    } finally {
      await engine.close();
    }
  }, 60_000);
});
