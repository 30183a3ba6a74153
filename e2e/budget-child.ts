/**
 * A worker process for the budget crash test: `node --import tsx e2e/budget-child.ts <database> <runs> [crash point] [after]`.
 * Starts runs b-0 … b-(n-1) of a workflow that reports 10 tokens after each of its 8 steps, under a budget of exactly
 * 8 steps and 80 tokens (idempotent: a restart starts nothing new), and works until all have ended. A report or a
 * step counted twice after a kill would fail its run over the budget.
 */
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';

const [database, runs, point, after] = process.argv.slice(2);
const metered = workflow('metered', { budget: { steps: 8, tokens: 80 } }, async (ctx) => {
  for (let i = 1; i <= 8; i++) {
    await ctx.step(`call-${i}`, async () => i);
    await ctx.usage({ tokens: 10, toolCalls: 1 });
  }
  return 'done';
});

const engine = await createEngine({ database: database!, workflows: [metered], pollMs: 100, leaseMs: 1000 });
if (point) armCrashPoint(point as CrashPointName, Number(after ?? 0));
const ids = Array.from({ length: Number(runs) }, (_, n) => `b-${n}`);
for (const id of ids) await engine.start(metered, null, { id });
for (const id of ids)
  await engine.runtime
    .handle(id)
    .result({ pollMs: 100 })
    .catch(() => {});
await engine.close();
