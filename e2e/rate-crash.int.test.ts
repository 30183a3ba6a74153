import { describe, expect, it } from 'vitest';
import { createEngine } from '../src/engine.js';
import { RUN_EVENT } from '../src/runtime/events.js';
import { backends } from '../src/testing/backends.js';
import { runScript } from './child.js';

const child = (...args: string[]) => runScript('e2e/rate-child.ts', ...args);

const RUNS = 4;

describe.each(backends)('rate-limit takes surviving SIGKILL on $name', (backend) => {
  it('a worker killed between a take and its step: the step runs after the restart, charged once', async () => {
    const database = await backend.create();
    // the second run's take has committed; its step has not started
    const killed = await child(database, String(RUNS), 'rate:afterTake', '1');
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const finished = await child(database, String(RUNS));
    expect(finished.code, finished.stderr).toBe(0);

    const engine = await createEngine({ database });
    try {
      let asked = 0;
      for (let n = 0; n < RUNS; n++) {
        expect((await engine.run(`r-${n}`)).status).toBe('success');
        const events = await engine.journal.readStream(`run:r-${n}`);
        expect(events.filter((e) => e.type === RUN_EVENT.stepStarted)).toHaveLength(1);
        expect(events.some((e) => e.type === RUN_EVENT.stepRateWaiting)).toBe(false);
        asked += events.filter((e) => e.type === RUN_EVENT.stepRateRequested).length;
      }
      // the killed run asked again after the restart (same ask, same answer) …
      expect(asked).toBeGreaterThan(RUNS);
      // … and was charged once: of RUNS + 1 units an hour, exactly one is left
      const take = () => engine.store.rateTake({ uses: [{ name: 'api', key: '', units: 1 }] });
      expect(await take()).toEqual({ ok: true });
      expect(await take()).toMatchObject({ ok: false });
    } finally {
      await engine.close();
    }
  }, 120_000);
});
