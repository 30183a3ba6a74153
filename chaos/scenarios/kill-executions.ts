import { Api } from '../lib/api.js';
import { Echo } from '../lib/echo.js';
import { ExecutionLoad } from '../lib/executions.js';
import { emptyFigures } from '../lib/figures.js';
import { countLeaks } from '../lib/leaks.js';
import { freePort, startServe, Supervised } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import { killStorm, recoverySeconds } from '../lib/storm.js';
import { Watcher } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/** `runledger serve` SIGKILLed 5 times while 500 stored executions (two HTTP effects each) run and keep arriving. */
export const killExecutions: Scenario = {
  name: 'kill-executions',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const port = await freePort();
    const echo = await new Echo(() => ctx.random.int(50, 250)).start();
    const server = new Supervised(ctx, () => startServe(ctx, { database, port }));
    const watcher = await Watcher.open(database);
    try {
      await server.up();
      const api = new Api(`http://127.0.0.1:${port}`);
      const load = new ExecutionLoad(ctx, api, echo);
      await load.setup();
      const count = ctx.size(500, 80);
      const submitting = load.submit(count, 4, 200);
      const storm = await killStorm(ctx, {
        target: server,
        watcher,
        kills: ctx.size(5, 2),
        gapMs: ctx.size<[number, number]>([2000, 5000], [1000, 2500]),
        recoveryLimitMs: RECOVERY_WAIT_MS,
      });
      await submitting;
      const outcome = await load.figures(watcher, ctx.deadline);
      const records = await Promise.all(
        [...load.accepted]
          .slice(0, 20)
          .map(([, id]) => api.send('GET', `/workflows/${load.workflowId}/executions/${id}`)),
      );
      await server.stop();
      const leaks = countLeaks(load.secret, {
        dir: ctx.dir,
        databases: [database],
        texts: records.map((r) => JSON.stringify(r?.body)),
      });
      const f = emptyFigures();
      Object.assign(f, {
        lost: outcome.lost,
        duplicated: outcome.duplicated,
        sameKeyRepeats: outcome.sameKeyRepeats,
        stuck: outcome.stuck,
        failed: outcome.failed + load.refused.length,
      });
      f.http5xx = api.fiveXX();
      f.leaked = leaks.count;
      f.recoverySeconds = recoverySeconds(storm, RECOVERY_WAIT_MS);
      f.notes.push(
        `${storm.kills} kills, recoveries ${storm.recoveries.join('/') || '-'}s${storm.timedOut ? `, ${storm.timedOut} not within ${RECOVERY_WAIT_MS / 1000}s` : ''}`,
        outcome.note,
        `http ${api.summary()}`,
      );
      if (leaks.count) f.notes.push(`secret found in ${leaks.places.join(', ')}`);
      if (api.samples.length) f.notes.push(...api.samples);
      return f;
    } finally {
      await server.stop();
      await watcher.close();
      await echo.close();
    }
  },
};
