import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from '../lib/cluster.js';
import type { ScenarioContext } from '../lib/context.js';
import { underMixedLoad } from '../lib/mixed.js';
import type { Scenario } from '../lib/scenario.js';
import { round, slowest } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/**
 * The scenario's PostgreSQL (a throwaway cluster) goes away under load, twice: `pg_ctl restart -m
 * fast`, or `stop -m immediate` and a start 3 s later. Just before each, a backlog of executions is
 * submitted at once (500; 100 in the short form, whose runs are slower), so
 * runs are queued behind the ones the fault interrupts. Recovery: from the database being back
 * until every run whose pass was under way when it went away moved again; queued runs are not
 * counted (they were not interrupted), so it says whether interrupted runs kept their place or
 * waited behind the backlog (before they did: 21.6–26 s with ~500 queued).
 */
function pgOutage(name: string, mode: 'fast' | 'immediate'): Scenario {
  return {
    name,
    backends: ['postgres'],
    async run(ctx: ScenarioContext) {
      const cluster = await Cluster.create(ctx);
      const database = await cluster.createDatabase('chaos');
      ctx.databases.push(database);
      const backlog = ctx.size(500, 100);
      return underMixedLoad(ctx, {
        database,
        executions: ctx.size(300, 80),
        messages: ctx.size(150, 30),
        worker: true,
        fault: async ({ watcher, figures, load }) => {
          // each outage's recovery is measured on the side: the second lands under load, not after it
          const tracking: Array<Promise<number | null>> = [];
          for (let i = 1; i <= 2; i++) {
            await sleep(ctx.random.int(2000, 4000));
            const submitting = Date.now();
            await load.submit(backlog, 32);
            const submitted = round((Date.now() - submitting) / 1000);
            const snapshot = await watcher.inFlight({ running: true });
            const queued = await watcher.queued();
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
                const seen = `${snapshot.size} runs running, ${queued} queued (a backlog of ${backlog} submitted in ${submitted}s)`;
                ctx.log(
                  `outage ${i} (${mode}): down ${round((up - down) / 1000)}s, ${seen}, ${r.timedOut ? 'not moving again' : `moving again ${r.seconds ?? '-'}s after`}`,
                );
                return r.timedOut ? RECOVERY_WAIT_MS / 1000 : r.seconds;
              }),
            );
          }
          const recoveries = await Promise.all(tracking);
          figures.recoverySeconds = slowest(recoveries);
          figures.notes.push(
            `2 outages (${mode}), each with a backlog of ${backlog} executions; recoveries ${recoveries.map((r) => r ?? '-').join('/')}s after the database was back (-: no run running)`,
          );
        },
      });
    },
  };
}

export const pgRestartFast = pgOutage('pg-restart-fast', 'fast');
export const pgStopImmediate = pgOutage('pg-stop-immediate', 'immediate');
