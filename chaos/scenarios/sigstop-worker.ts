import { setTimeout as sleep } from 'node:timers/promises';
import { Api } from '../lib/api.js';
import { Echo } from '../lib/echo.js';
import { ExecutionLoad } from '../lib/executions.js';
import { emptyFigures } from '../lib/figures.js';
import { freePort, startServe, startWorker, type Child } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import { round, Watcher } from '../lib/watch.js';

/** Short, so the scenario is short: what is tested is the fencing, not the default lease. */
const LEASE_MS = 4000;
const ECHO_MS = 2000;

/**
 * Worker A takes executions whose HTTP effects answer slowly, and is SIGSTOPped mid-step. Worker B
 * must take them over once A's lease ran out and finish them. Then A gets SIGCONT: its steps
 * return and it tries to write — and must write nothing (no event appended after it resumed; the
 * journal checker finds no stale step result). Recovery: how long past the lease B took over.
 */
export const sigstopWorker: Scenario = {
  name: 'sigstop-worker',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const port = await freePort();
    const echo = await new Echo(() => ECHO_MS).start();
    const env = { RUNLEDGER_LEASE_MS: String(LEASE_MS) };
    const watcher = await Watcher.open(database);
    const children: Child[] = [];
    try {
      children.push(await startServe(ctx, { database, port, args: ['--no-workers'], env }));
      const api = new Api(`http://127.0.0.1:${port}`);
      const load = new ExecutionLoad(ctx, api, echo);
      await load.setup();
      const a = await startWorker(ctx, { database, env, label: 'worker-a' });
      children.push(a);
      await load.submit(ctx.size(10, 5), 5);
      for (let held = 0; held < load.accepted.size; held = (await watcher.inFlight()).size) await sleep(100);
      await sleep(ECHO_MS / 2);
      const held = await watcher.inFlight();
      a.proc.kill('SIGSTOP');
      const stoppedAt = Date.now();
      ctx.log(`worker A stopped holding ${held.size} runs`);
      children.push(await startWorker(ctx, { database, env, label: 'worker-b' }));
      const takeover = await watcher.recovery(held, stoppedAt, LEASE_MS + 30_000);
      const outcome = await load.figures(watcher, Math.min(ctx.deadline, Date.now() + 60_000));
      // B completes a run's task after the run's last event: wait for that too, so what follows is A's alone
      while ((await watcher.store.taskList({ state: 'running', limit: 1 })).length > 0 && ctx.msLeft() > 0)
        await sleep(100);
      const head = await watcher.store.eventHead();
      a.proc.kill('SIGCONT');
      ctx.log(`worker A resumed; waiting ${(ECHO_MS * 2) / 1000}s for what it tries to write`);
      await sleep(ECHO_MS * 2);
      const stale = (await watcher.store.eventReadCommitted({ after: head, limit: 100 })).events;
      for (const child of children.reverse()) await child.stop();
      const f = emptyFigures();
      Object.assign(f, {
        lost: outcome.lost,
        duplicated: outcome.duplicated + stale.length,
        sameKeyRepeats: outcome.sameKeyRepeats,
        stuck: outcome.stuck,
        failed: outcome.failed + load.refused.length,
      });
      f.http5xx = api.fiveXX();
      f.recoverySeconds = takeover.seconds === null ? null : round(Math.max(0, takeover.seconds - LEASE_MS / 1000));
      f.notes.push(
        `A held ${held.size} runs; B moved them ${takeover.timedOut ? 'never' : `${takeover.seconds}s`} after the SIGSTOP (lease ${LEASE_MS / 1000}s)`,
        `events appended after A resumed: ${stale.length}${
          stale.length
            ? ` (${stale
                .slice(0, 3)
                .map((e) => `${e.event.streamId} ${e.event.type}`)
                .join(', ')})`
            : ''
        }`,
        outcome.note,
      );
      if (takeover.timedOut) f.stuck += held.size;
      return f;
    } finally {
      for (const child of children) {
        child.proc.kill('SIGCONT');
        await child.stop();
      }
      await watcher.close();
      await echo.close();
    }
  },
};
