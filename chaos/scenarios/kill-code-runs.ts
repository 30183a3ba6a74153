import { setTimeout as sleep } from 'node:timers/promises';
import { codeWorkflows } from '../lib/code.js';
import { Echo } from '../lib/echo.js';
import { emptyFigures } from '../lib/figures.js';
import { runFigures } from '../lib/outcome.js';
import { startWorker, Supervised } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import { killStorm, recoverySeconds } from '../lib/storm.js';
import { Watcher } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/** `runledger worker --workflows` SIGKILLed 5 times while 300 three-step code runs (an HTTP effect per step) run and keep arriving. */
export const killCodeRuns: Scenario = {
  name: 'kill-code-runs',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const echo = await new Echo(() => ctx.random.int(50, 250)).start();
    const code = await codeWorkflows(ctx, database);
    const worker = new Supervised(ctx, () => startWorker(ctx, { database, workflows: code.module }));
    const watcher = await Watcher.open(database);
    try {
      await worker.up();
      const count = ctx.size(300, 60);
      const accepted = new Map<number, string>();
      const starting = (async () => {
        for (let n = 0; n < count && ctx.msLeft() > 0; n++) {
          const run = await code.engine.start(code.effects, { n, echo: echo.url }, { id: `code-${n}` });
          accepted.set(n, run.id);
          await sleep(50);
        }
      })();
      const storm = await killStorm(ctx, {
        target: worker,
        watcher,
        kills: ctx.size(5, 2),
        gapMs: ctx.size<[number, number]>([2000, 5000], [1000, 2500]),
        recoveryLimitMs: RECOVERY_WAIT_MS,
      });
      await starting;
      const outcome = await runFigures(
        watcher,
        echo,
        accepted,
        (n) => [1, 2, 3].map((i) => `${n}:s${i}`),
        ctx.deadline,
      );
      const f = emptyFigures();
      const { effects, ...figures } = outcome;
      Object.assign(f, figures);
      f.recoverySeconds = recoverySeconds(storm, RECOVERY_WAIT_MS);
      f.notes.push(
        `${storm.kills} kills, recoveries ${storm.recoveries.join('/') || '-'}s${storm.timedOut ? `, ${storm.timedOut} not within ${RECOVERY_WAIT_MS / 1000}s` : ''}`,
        `runs ${accepted.size} started; effects ${effects} received`,
      );
      return f;
    } finally {
      await worker.stop();
      await watcher.close();
      await echo.close();
    }
  },
};
