import { setTimeout as sleep } from 'node:timers/promises';
import { codeWorkflows } from '../lib/code.js';
import { Echo } from '../lib/echo.js';
import { emptyFigures } from '../lib/figures.js';
import { runFigures } from '../lib/outcome.js';
import { startWorker, type Child } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import { Watcher } from '../lib/watch.js';

const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
/** Each worker's clock is this far off, one ahead and one behind: 20 minutes apart. */
const SKEW = '10m';
const SLEEP_MS = 3000;
/** A timer that fires this much after its time is late (the fallback poll is 1 s; a busy machine adds some). */
const LATE_MS = 10_000;

const skewed = (offset: string): NodeJS.ProcessEnv => ({
  LD_PRELOAD: FAKETIME_LIB,
  FAKETIME: offset,
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
});

/**
 * Two `runledger worker`s whose clocks (libfaketime) are 10 minutes ahead and 10 minutes behind
 * run code workflows that make an effect, sleep durably for 3 s, and make another. Leases and
 * timers are on the database clock, so: no lease expires (nobody died), no timer fires early
 * (the effects' wall-clock gap is at least the sleep), none late. PostgreSQL only: a SQLite
 * database's clock is the clock of each process that writes it, and processes on one machine
 * share one clock unless a test fakes it.
 */
export const clockSkew: Scenario = {
  name: 'clock-skew',
  backends: ['postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const echo = await new Echo(() => ctx.random.int(10, 100)).start();
    const code = await codeWorkflows(ctx, database);
    const watcher = await Watcher.open(database);
    const workers: Child[] = [];
    try {
      workers.push(
        await startWorker(ctx, { database, workflows: code.module, env: skewed(`+${SKEW}`), label: 'worker-ahead' }),
      );
      workers.push(
        await startWorker(ctx, { database, workflows: code.module, env: skewed(`-${SKEW}`), label: 'worker-behind' }),
      );
      const accepted = new Map<number, string>();
      for (let n = 0; n < ctx.size(60, 20); n++) {
        const run = await code.engine.start(code.timers, { n, echo: echo.url, sleepMs: SLEEP_MS }, { id: `skew-${n}` });
        accepted.set(n, run.id);
        await sleep(ctx.random.int(20, 150));
      }
      const outcome = await runFigures(
        watcher,
        echo,
        accepted,
        (n) => [`${n}:before`, `${n}:after`],
        Math.min(ctx.deadline, Date.now() + ctx.size(60_000, 25_000)),
      );
      for (const w of workers) await w.stop();
      const first = (effect: string) => echo.receipts.find((r) => r.effect === effect)?.at;
      let early = 0;
      let late = 0;
      const gaps: number[] = [];
      for (const n of accepted.keys()) {
        const before = first(`${n}:before`);
        const after = first(`${n}:after`);
        if (before === undefined || after === undefined) continue;
        gaps.push(after - before);
        if (after - before < SLEEP_MS) early += 1;
        if (after - before > SLEEP_MS + LATE_MS) late += 1;
      }
      const expired = (await watcher.store.eventReadAll({ types: ['task.lease_expired'], limit: 1000 })).length;
      const f = emptyFigures();
      const { effects, ...figures } = outcome;
      Object.assign(f, figures);
      f.failed += early + expired;
      f.stuck += late;
      gaps.sort((x, y) => x - y);
      f.notes.push(
        `workers ${SKEW} ahead and ${SKEW} behind; ${accepted.size} runs with a ${SLEEP_MS / 1000}s sleep; effects ${effects} received`,
        `wall-clock gap around the sleep: min ${gaps[0] ?? '-'} ms, median ${gaps[gaps.length >> 1] ?? '-'} ms, max ${gaps.at(-1) ?? '-'} ms; ${early} early, ${late} late`,
        `leases expired with no worker dead: ${expired}`,
      );
      return f;
    } finally {
      for (const w of workers) await w.stop();
      await watcher.close();
      await echo.close();
    }
  },
};
