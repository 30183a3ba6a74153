import { setTimeout as sleep } from 'node:timers/promises';
import { underMixedLoad } from '../lib/mixed.js';
import { Proxy } from '../lib/proxy.js';
import type { Scenario } from '../lib/scenario.js';
import { slowest } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/**
 * The engine reaches PostgreSQL through a TCP proxy that, under load, resets every connection
 * (3 times) and stalls them all for 5 s (twice), in a seeded order. Recovery: from each fault's
 * end until every run in flight at its start moved again.
 */
export const pgProxy: Scenario = {
  name: 'pg-proxy',
  backends: ['postgres'],
  async run(ctx) {
    const direct = await ctx.database();
    const url = new URL(direct);
    const proxy = await new Proxy({ host: url.hostname, port: Number(url.port) }).start();
    ctx.defer(() => proxy.close());
    return underMixedLoad(ctx, {
      database: direct,
      through: proxy.through(direct),
      executions: ctx.size(300, 80),
      messages: ctx.size(150, 30),
      worker: true,
      fault: async ({ watcher, figures }) => {
        const faults = ctx.size(['drop', 'stall', 'drop', 'stall', 'drop'], ['drop', 'stall']);
        const recoveries: Array<number | null> = [];
        for (const fault of faults) {
          await sleep(ctx.random.int(1500, 3500));
          const snapshot = await watcher.inFlight();
          const what =
            fault === 'drop' ? `dropped ${proxy.dropAll()} connections` : (await proxy.stall(5000), 'stalled 5s');
          const r = await watcher.recovery(snapshot, Date.now(), RECOVERY_WAIT_MS);
          recoveries.push(r.timedOut ? RECOVERY_WAIT_MS / 1000 : r.seconds);
          ctx.log(
            `${what}: ${snapshot.size} runs in flight, ${r.timedOut ? 'not moving again' : `moving again ${r.seconds ?? '-'}s after`}`,
          );
        }
        figures.recoverySeconds = slowest(recoveries);
        figures.notes.push(
          `${faults.join(', ')}: recoveries ${recoveries.map((r) => r ?? '-').join('/')}s (-: no run in flight)`,
        );
      },
    });
  },
};
