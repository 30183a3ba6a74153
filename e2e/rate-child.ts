/**
 * A worker process for the rate-limit crash test: `node --import tsx e2e/rate-child.ts <database> <runs> [crash point] [after]`.
 * Defines the limit `api` (runs + 4 per hour: room for repeated attempts of runs the kill cut short), starts runs r-0 … r-(n-1) of a workflow whose one step takes a unit of
 * it (idempotent: a restart starts nothing new), and works until all have ended.
 */
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';

const [database, runs, point, after] = process.argv.slice(2);
const rated = workflow('rated', async (ctx) => ctx.step('call', async () => 'called', { rateLimit: { name: 'api' } }));

const engine = await createEngine({ database: database!, workflows: [rated], pollMs: 100, leaseMs: 1000 });
await engine.limits.define({ name: 'api', limit: Number(runs) + 4, period: '1h' });
if (point) armCrashPoint(point as CrashPointName, Number(after ?? 0));
const ids = Array.from({ length: Number(runs) }, (_, n) => `r-${n}`);
for (const id of ids) await engine.start(rated, null, { id });
for (const id of ids)
  await engine.runtime
    .handle(id)
    .result({ pollMs: 100 })
    .catch(() => {});
await engine.close();
