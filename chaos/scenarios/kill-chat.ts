import { Api } from '../lib/api.js';
import { ChatLoad } from '../lib/chat.js';
import { emptyFigures } from '../lib/figures.js';
import { freePort, startServe, Supervised } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import { killStorm, recoverySeconds } from '../lib/storm.js';
import { Watcher } from '../lib/watch.js';

const RECOVERY_WAIT_MS = 40_000;

/**
 * `runledger serve` SIGKILLed 5 times while 300 user messages over 4 channels arrive, each to be
 * stored once and answered once by the offline model. Recovery: from a kill until the reply to a
 * message posted right after it is stored.
 */
export const killChat: Scenario = {
  name: 'kill-chat',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const port = await freePort();
    const server = new Supervised(ctx, () => startServe(ctx, { database, port }));
    const watcher = await Watcher.open(database);
    try {
      await server.up();
      const api = new Api(`http://127.0.0.1:${port}`);
      const chat = new ChatLoad(ctx, api);
      const posting = chat.post(ctx.size(300, 60), 2, 100);
      let probes = 0;
      const measure = async (killedAt: number) => {
        const id = `probe-${++probes}`;
        await chat.postOne('chaos-probe', id, `probe ${probes}`);
        return chat.replied('chaos-probe', id, killedAt, RECOVERY_WAIT_MS);
      };
      const storm = await killStorm(ctx, {
        target: server,
        watcher,
        kills: ctx.size(5, 2),
        gapMs: ctx.size<[number, number]>([2000, 5000], [1000, 2500]),
        recoveryLimitMs: RECOVERY_WAIT_MS,
        measure,
      });
      await posting;
      const outcome = await chat.figures(ctx.deadline);
      const f = emptyFigures();
      Object.assign(f, {
        lost: outcome.lost,
        duplicated: outcome.duplicated,
        stuck: outcome.stuck,
        failed: chat.refused.length,
      });
      f.http5xx = api.fiveXX();
      f.recoverySeconds = recoverySeconds(storm, RECOVERY_WAIT_MS);
      f.notes.push(
        `${storm.kills} kills, recoveries ${storm.recoveries.join('/') || '-'}s${storm.timedOut ? `, ${storm.timedOut} not within ${RECOVERY_WAIT_MS / 1000}s` : ''}`,
        outcome.note,
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
