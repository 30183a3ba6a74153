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
      let attempts = 0;
      let killed = 0;
      for (let n = 0; n < RUNS; n++) {
        expect((await engine.run(`r-${n}`)).status).toBe('success');
        const events = await engine.journal.readStream(`run:r-${n}`);
        const of = (type: string) =>
          events.filter((e) => e.type === type).map((e) => e.data as { attempt: number; round?: number });
        const trace = JSON.stringify(events.map((e) => [e.type, e.data]));
        const started = of(RUN_EVENT.stepStarted);
        const requests = of(RUN_EVENT.stepRateRequested);
        // the step's effect once: one completion, whatever the kill cut short
        expect(of(RUN_EVENT.stepCompleted), trace).toHaveLength(1);
        expect(of(RUN_EVENT.stepFailed), trace).toHaveLength(0);
        expect(
          events.some((e) => e.type === RUN_EVENT.stepRateWaiting),
          trace,
        ).toBe(false);
        // The worker runs several runs at once: another run's step may have started, its completion not yet
        // journaled (it goes with the run's next write), when the kill came. That attempt runs again after the
        // restart as attempt 2 and takes its own unit (the call may have been made). Only the last attempt completes.
        expect(
          started.map((s) => s.attempt),
          trace,
        ).toEqual(started.map((_, i) => i + 1));
        // each attempt asked under one id (attempt, round 1); an ask without its step start is the killed take,
        // asked again after the restart under the same id
        const ids = new Set(requests.map((r) => `${r.attempt}:${r.round}`));
        expect([...ids].sort(), trace).toEqual(started.map((s) => `${s.attempt}:1`));
        if (requests.length > ids.size) {
          expect(requests.length - ids.size, trace).toBe(1);
          killed++;
        }
        asked += requests.length;
        attempts += started.length;
      }
      // the killed run asked again after the restart (same ask, same answer) …
      // (the run whose take hit the crash point, and any other whose take had committed, its step not started)
      expect(killed).toBeGreaterThanOrEqual(1);
      expect(asked).toBe(attempts + killed);
      // … and was charged once: every attempt took one unit of RUNS + 4 an hour, a repeated ask none
      const left = RUNS + 4 - attempts;
      expect(left).toBeGreaterThanOrEqual(0);
      const take = () => engine.store.rateTake({ uses: [{ name: 'api', key: '', units: 1 }] });
      for (let n = 0; n < left; n++) expect(await take()).toEqual({ ok: true });
      expect(await take()).toMatchObject({ ok: false });
    } finally {
      await engine.close();
    }
  }, 120_000);
});
