import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from '../lib/cluster.js';
import type { ScenarioContext } from '../lib/context.js';
import { underMixedLoad } from '../lib/mixed.js';
import type { Scenario } from '../lib/scenario.js';
import { round, slowest } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/**
 * The scenario's PostgreSQL (a throwaway cluster) goes away under load, twice: `pg_ctl restart -m
 * fast`, or `stop -m immediate` and a start 3 s later. Recovery: from the database being back
 * until every run that was in flight when it went away moved again.
 */
function pgOutage(name: string, mode: 'fast' | 'immediate'): Scenario {
  return {
    name,
    backends: ['postgres'],
    async run(ctx: ScenarioContext) {
      const cluster = await Cluster.create(ctx);
      const database = await cluster.createDatabase('chaos');
      ctx.databases.push(database);
      return underMixedLoad(ctx, {
        database,
        executions: ctx.size(300, 80),
        messages: ctx.size(150, 30),
        worker: true,
        fault: async ({ watcher, figures }) => {
          // each outage's recovery is measured on the side: the second lands under load, not after it
          const tracking: Array<Promise<number | null>> = [];
          for (let i = 1; i <= 2; i++) {
            await sleep(ctx.random.int(2000, 4000));
            const snapshot = await watcher.inFlight();
            const down = Date.now();
            if (mode === 'fast') await cluster.restart();
            else {
              await cluster.stop('immediate');
              await sleep(3000);
              await cluster.start();
            }
            const up = Date.now();
            tracking.push(
              watcher.recovery(snapshot, up, RECOVERY_WAIT_MS).then((r) => {
                ctx.log(`outage ${i} (${mode}): down ${round((up - down) / 1000)}s, ${snapshot.size} runs in flight, ${r.timedOut ? 'not moving again' : `moving again ${r.seconds ?? '-'}s after`}`);
                return r.timedOut ? RECOVERY_WAIT_MS / 1000 : r.seconds;
              }),
            );
          }
          const recoveries = await Promise.all(tracking);
          figures.recoverySeconds = slowest(recoveries);
          figures.notes.push(`2 outages (${mode}), recoveries ${recoveries.map((r) => r ?? '-').join('/')}s after the database was back (-: no run in flight)`);
        },
      });
    },
  };
}

export const pgRestartFast = pgOutage('pg-restart-fast', 'fast');
export const pgStopImmediate = pgOutage('pg-stop-immediate', 'immediate');
