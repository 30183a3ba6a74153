import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { createEngine } from '../../src/engine.js';
import type { Workflow } from '../../src/runtime/workflow.js';
import { flowOf } from '../../src/runtime/start/run-flow.js';
import type { StoredEvent } from '../../src/storage/store.js';
import { slotsHeld } from '../limits-check.js';
import { Echo } from '../lib/echo.js';
import { emptyFigures } from '../lib/figures.js';
import { runFigures } from '../lib/outcome.js';
import { ROOT, startWorker, Supervised } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';
import type { ScenarioContext } from '../lib/context.js';
import { recoverySeconds, type StormResult } from '../lib/storm.js';
import { type Snapshot, Watcher } from '../lib/watch.js';

const LIMIT = 2;
const KEYS = ['k0', 'k1', 'k2', 'k3'];

/** Three steps, each a POST of `<n>:s<i>` to the echo server, at most 2 runs of a key in flight. */
const SOURCE = (root: string) => `import { workflow } from '${pathToFileURL(join(root, 'dist/index.js')).href}';

const post = (echo, effect, key) =>
  fetch(echo + '/effect', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ effect }),
  })
    .then((res) => { if (!res.ok) throw new Error('echo answered ' + res.status); return res.json(); });

const limits = { concurrency: [{ key: 'input.k', limit: ${LIMIT} }] };
export const limited = workflow('chaos-limited', limits, async (ctx, input) => {
  for (let i = 1; i <= 3; i++)
    await ctx.step('s' + i, ({ idempotencyKey }) => post(input.echo, input.n + ':s' + i, idempotencyKey));
  return input.n;
});
`;

/**
 * Two `runledger worker --workflows` processes SIGKILLed in turn (3 times each, once short), under 300 three-step code
 * runs over 4 keys with a limit of 2 runs per key: every run ends once with its effects, and the journal checker's rule
 * holds (no key ever had more than 2 runs between their first step and their end, `chaos/limits-check.ts`).
 * Recovery: from a kill until the runs let in (not those waiting for a slot) moved again.
 */
export const killLimits: Scenario = {
  name: 'kill-limits',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    // the storm stops when less than this (and 30 s more) is left: a short run has 90 s in all
    const RECOVERY_WAIT_MS = ctx.size(40_000, 20_000);
    const database = await ctx.database();
    const echo = await new Echo(() => ctx.random.int(...ctx.size<[number, number]>([50, 150], [10, 50]))).start();
    const module = join(ctx.dir, 'limited.mjs');
    writeFileSync(module, SOURCE(ROOT));
    const { limited } = (await import(pathToFileURL(module).href)) as {
      limited: Workflow<{ n: number; k: string; echo: string }>;
    };
    const engine = await createEngine({ database, workers: false, workflows: [limited] });
    ctx.defer(() => engine.close().catch(() => {}));
    const workers = [1, 2].map(
      (i) => new Supervised(ctx, () => startWorker(ctx, { database, workflows: module, label: `worker${i}` })),
    );
    const watcher = await Watcher.open(database);
    try {
      await Promise.all(workers.map((w) => w.up()));
      const count = ctx.size(300, 40);
      const accepted = new Map<number, string>();
      const starting = (async () => {
        for (let n = 0; n < count && ctx.msLeft() > 0; n++) {
          const k = KEYS[ctx.random.int(0, KEYS.length - 1)]!;
          const run = await engine.start(limited, { n, k, echo: echo.url }, { id: `limited-${n}` });
          accepted.set(n, run.id);
          await sleep(ctx.size(50, 40));
        }
      })();
      const storm = await alternatingStorm(ctx, workers, watcher, RECOVERY_WAIT_MS);
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
      // the checker holds every slot to its limit; here: each run did record its limit, and the load filled the slots
      const streams = new Map<string, StoredEvent[]>();
      for (const id of accepted.values())
        streams.set(`run:${id}`, await watcher.store.eventReadStream({ streamId: `run:${id}` }));
      const held = slotsHeld(streams);
      const unlimited = [...streams.values()].filter((list) => !flowOf(list[0]?.data)?.concurrency?.length).length;
      if (unlimited > 0) {
        f.failed += unlimited;
        f.notes.push(`${unlimited} runs recorded no concurrency limit in their run.started`);
      }
      f.recoverySeconds = recoverySeconds(storm, RECOVERY_WAIT_MS);
      f.notes.push(
        `${storm.kills} kills of 2 workers in turn, recoveries ${storm.recoveries.join('/') || '-'}s` +
          (storm.timedOut ? `, ${storm.timedOut} not within ${RECOVERY_WAIT_MS / 1000}s` : ''),
        `runs ${accepted.size} started over ${KEYS.length} keys of limit ${LIMIT}; effects ${effects} received`,
        `most runs in at once: ${[...held].map(([slot, s]) => `${slot} ${s.most}`).join(', ') || '-'}`,
      );
      return f;
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
      await watcher.close();
      await echo.close();
    }
  },
};

/**
 * SIGKILLs of the workers in turn (`kills` of each), a seeded pause before each, so one worker is usually up while
 * the other restarts. Recovery: from a kill until every run that held its slots and was not waiting for one (running,
 * or pending: let in, its pass queued) moved again; none such is a recovery of 0.
 */
async function alternatingStorm(
  ctx: ScenarioContext,
  workers: Supervised[],
  watcher: Watcher,
  limitMs: number,
): Promise<StormResult> {
  const result: StormResult = { kills: 0, recoveries: [], timedOut: 0 };
  const tracking: Array<Promise<void>> = [];
  const kills = ctx.size(3, 1) * workers.length;
  for (let i = 0; i < kills; i++) {
    if (ctx.msLeft() < limitMs + 30_000) {
      ctx.log(`storm: stopped after ${i} of ${kills} kills, the scenario's time is short`);
      break;
    }
    await sleep(ctx.random.int(...ctx.size<[number, number]>([2000, 5000], [1000, 2500])));
    const all = await watcher.inFlight();
    const snapshot: Snapshot = new Map();
    for (const [id, version] of all) {
      const status = await watcher.status(id);
      if (status === 'running' || status === 'pending') snapshot.set(id, version);
    }
    const killedAt = Date.now();
    await workers[i % workers.length]!.kill('SIGKILL');
    result.kills += 1;
    tracking.push(
      (async () => {
        const r = await watcher.recovery(snapshot, killedAt, limitMs);
        if (r.timedOut) result.timedOut += 1;
        else result.recoveries.push(r.seconds ?? 0);
        ctx.log(
          `kill ${i + 1} (worker${(i % workers.length) + 1}): ${snapshot.size} runs let in, ` +
            (r.timedOut ? `not moved: ${r.unmoved.slice(0, 5).join(', ')}` : `moving again after ${r.seconds ?? 0}s`),
        );
      })(),
    );
  }
  await Promise.all(tracking);
  return result;
}
