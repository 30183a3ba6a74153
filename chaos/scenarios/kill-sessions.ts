import { setTimeout as sleep } from 'node:timers/promises';
import { Api } from '../lib/api.js';
import { emptyFigures } from '../lib/figures.js';
import { freePort, startServe, Supervised } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import { killStorm, recoverySeconds } from '../lib/storm.js';
import { Watcher } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/**
 * `runledger serve` SIGKILLed 5 times while 200 sessions of the built-in `sample-agent` start
 * (each sent again after a failure under the same session id) and run; each must end `success`,
 * its lifecycle events each written once in order (the journal checker).
 */
export const killSessions: Scenario = {
  name: 'kill-sessions',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const port = await freePort();
    const server = new Supervised(ctx, () => startServe(ctx, { database, port }));
    const watcher = await Watcher.open(database);
    try {
      await server.up();
      const api = new Api(`http://127.0.0.1:${port}`);
      const accepted = new Set<string>();
      const refused: string[] = [];
      const count = ctx.size(200, 40);
      const starting = (async () => {
        for (let n = 0; n < count && ctx.msLeft() > 0; n++) {
          const id = `s-${n}`;
          const answer = await api.send(
            'POST',
            '/sessions',
            { agent: 'sample-agent', session_id: id, input: { n } },
            {},
            ctx.deadline,
          );
          if (answer?.status === 202) accepted.add(id);
          else
            refused.push(
              `${id}: ${answer ? `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}` : 'no answer in time'}`,
            );
          await sleep(100);
        }
      })();
      const storm = await killStorm(ctx, {
        target: server,
        watcher,
        kills: ctx.size(5, 2),
        gapMs: ctx.size<[number, number]>([2000, 5000], [1000, 2500]),
        recoveryLimitMs: RECOVERY_WAIT_MS,
      });
      await starting;
      const f = emptyFigures();
      const runs = await watcher.settle(accepted, ctx.deadline);
      const statuses = new Map<string, number>();
      for (const id of accepted) {
        const answer = runs.get(id) === undefined ? null : await api.send('GET', `/sessions/${id}`);
        const status = answer?.status === 200 ? (answer.body.status as string) : 'missing';
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 'missing') f.lost += 1;
        else if (status === 'failed') f.failed += 1;
        else if (status !== 'success') f.stuck += 1;
      }
      f.failed += refused.length;
      f.http5xx = api.fiveXX();
      f.recoverySeconds = recoverySeconds(storm, RECOVERY_WAIT_MS);
      f.notes.push(
        `${storm.kills} kills, recoveries ${storm.recoveries.join('/') || '-'}s${storm.timedOut ? `, ${storm.timedOut} not within ${RECOVERY_WAIT_MS / 1000}s` : ''}`,
        `sessions ${accepted.size} accepted, ${refused.length} refused${refused.length ? ` (${refused[0]})` : ''}; ${[...statuses].map(([s, n]) => `${s} ${n}`).join(', ')}`,
        `http ${api.summary()}`,
        ...api.samples,
      );
      return f;
    } finally {
      await server.stop();
      await watcher.close();
    }
  },
};
