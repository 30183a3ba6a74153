import { Api } from './api.js';
import { ChatLoad } from './chat.js';
import type { ScenarioContext } from './context.js';
import { Echo } from './echo.js';
import { ExecutionLoad } from './executions.js';
import { emptyFigures, type Figures } from './figures.js';
import { countLeaks } from './leaks.js';
import { freePort, startServe, startWorker, Supervised } from './proc.js';
import { Watcher } from './watch.js';

/**
 * The load of the infrastructure scenarios: one `runledger serve` (restarted if it exits, like a
 * supervisor would) with stored executions and chat messages arriving (at most `executions`
 * and `messages`) for as long as `fault` breaks something; then everything accepted must end,
 * once, with its effects, and no lease may end (nobody died). With `worker`, a `runledger worker`
 * takes runs beside the server. They reach the database at `through` when given (a proxy); the
 * scenario's own reads go to `database` directly.
 */
export async function underMixedLoad(
  ctx: ScenarioContext,
  o: {
    database: string;
    through?: string;
    env?: NodeJS.ProcessEnv;
    executions: number;
    messages: number;
    worker?: boolean;
    fault: (m: { watcher: Watcher; api: Api; figures: Figures; load: ExecutionLoad }) => Promise<void>;
  },
): Promise<Figures> {
  const port = await freePort();
  // the short form's fewer runs are slower (each effect answers in 0.3–0.8 s) and arrive more
  // slowly, so the load lasts through the faults (~10–15 s) with runs in flight at each of them
  const echo = await new Echo(() => (ctx.short ? ctx.random.int(300, 800) : ctx.random.int(20, 150))).start();
  const reach = { database: o.through ?? o.database, ...(o.env ? { env: o.env } : {}) };
  const server = new Supervised(ctx, () => startServe(ctx, { ...reach, port }));
  const worker = o.worker ? new Supervised(ctx, () => startWorker(ctx, reach)) : null;
  const watcher = await Watcher.open(o.database);
  const f = emptyFigures();
  try {
    await server.up();
    await worker?.up();
    const api = new Api(`http://127.0.0.1:${port}`);
    const load = new ExecutionLoad(ctx, api, echo);
    await load.setup();
    const chat = new ChatLoad(ctx, api);
    let faulting = true;
    const submitting = load.submit(o.executions, 4, ctx.size(250, 500), () => !faulting);
    const posting = chat.post(o.messages, 2, ctx.size(400, 1000), () => !faulting);
    await o.fault({ watcher, api, figures: f, load }).finally(() => (faulting = false));
    await Promise.all([submitting, posting]);
    const runs = await load.figures(watcher, ctx.deadline);
    const messages = await chat.figures(ctx.deadline);
    await server.stop();
    await worker?.stop();
    // nobody died: a lease ended under a live process (taken for dead, or held past its length) breaks a rule
    const expired = (await watcher.store.eventReadAll({ types: ['task.lease_expired'], limit: 1000 })).length;
    const leaks = countLeaks(load.secret, { dir: ctx.dir, databases: [o.database] });
    f.lost += runs.lost + messages.lost;
    f.duplicated += runs.duplicated + messages.duplicated;
    f.sameKeyRepeats += runs.sameKeyRepeats;
    f.stuck += runs.stuck + messages.stuck;
    f.failed += runs.failed + expired;
    f.http5xx += api.fiveXX();
    f.leaked += leaks.count;
    f.notes.push(
      runs.note,
      messages.note,
      `leases ended under a live process: ${expired}${worker ? ' (serve and a worker)' : ''}`,
      `http ${api.summary()}; ${api.networkErrors} network errors`,
      ...api.samples,
    );
    return f;
  } finally {
    await server.stop();
    await worker?.stop();
    await watcher.close();
    await echo.close();
  }
}
