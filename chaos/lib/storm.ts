import { setTimeout as sleep } from 'node:timers/promises';
import type { ScenarioContext } from './context.js';
import type { Supervised } from './proc.js';
import type { Watcher } from './watch.js';

export interface StormResult {
  kills: number;
  /** Seconds from each kill until the work it interrupted moved again (kills with nothing in flight are left out). */
  recoveries: number[];
  /** Kills after which the interrupted work had not moved within the limit. */
  timedOut: number;
}

/**
 * `kills` SIGKILLs of `target`, each after a seeded pause of `gapMs` while the load runs; the
 * supervisor starts it again at once, with the same arguments and data folder. Each kill's
 * recovery is measured on the side, without holding up the next kill: the time until the runs
 * that were in flight moved again (up to `recoveryLimitMs`), or `measure(killedAt)` when given.
 */
export async function killStorm(
  ctx: ScenarioContext,
  o: {
    target: Supervised;
    watcher: Watcher;
    kills: number;
    gapMs: [number, number];
    recoveryLimitMs: number;
    measure?: (killedAt: number) => Promise<number | null>;
  },
): Promise<StormResult> {
  const result: StormResult = { kills: 0, recoveries: [], timedOut: 0 };
  const tracking: Array<Promise<void>> = [];
  for (let i = 1; i <= o.kills; i++) {
    if (ctx.msLeft() < o.recoveryLimitMs + o.gapMs[1] + 30_000) {
      ctx.log(`storm: stopped after ${i - 1} of ${o.kills} kills, the scenario's time is short`);
      break;
    }
    await sleep(ctx.random.int(...o.gapMs));
    const snapshot = o.measure ? null : await o.watcher.inFlight();
    const killedAt = Date.now();
    await o.target.kill('SIGKILL');
    result.kills += 1;
    tracking.push(
      (async () => {
        let seconds: number | null;
        let unmoved = '';
        if (o.measure) {
          seconds = await o.measure(killedAt);
          if (seconds === null) result.timedOut += 1;
        } else {
          const r = await o.watcher.recovery(snapshot!, killedAt, o.recoveryLimitMs);
          if (r.timedOut) result.timedOut += 1;
          seconds = r.seconds;
          if (r.timedOut) unmoved = ` (not moved: ${await describe(o.watcher, r.unmoved)})`;
        }
        if (seconds !== null) result.recoveries.push(seconds);
        ctx.log(
          `kill ${i}: ${snapshot ? `${snapshot.size} runs in flight, ` : ''}${seconds === null ? (unmoved ? 'no recovery' : 'nothing to recover') : `moving again after ${seconds}s`}${unmoved}`,
        );
      })(),
    );
  }
  await Promise.all(tracking);
  return result;
}

/** The figure for a storm: the slowest recovery, or the limit when one never came. */
export function recoverySeconds(storm: StormResult, limitMs: number): number | null {
  if (storm.timedOut > 0) return limitMs / 1000;
  return storm.recoveries.length ? Math.max(...storm.recoveries) : null;
}

async function describe(watcher: Watcher, ids: string[]): Promise<string> {
  const parts = await Promise.all(ids.slice(0, 5).map(async (id) => `${id} ${await watcher.status(id)}`));
  return parts.join(', ') + (ids.length > 5 ? ` and ${ids.length - 5} more` : '');
}
