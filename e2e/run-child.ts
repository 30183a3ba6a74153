/**
 * A worker process for the run crash test: `node --import tsx e2e/run-child.ts <database> <log> <runs> [crash point] [after]`.
 * Starts runs r-0 … r-(n-1) of a five-step workflow (idempotent: a restart starts nothing new) and
 * works until all have ended. Each step execution appends a line to <log> first, synchronously, so
 * the parent can count executions across kills.
 */
import { appendFileSync } from 'node:fs';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';

const [database, log, runs, point, after] = process.argv.slice(2);
const five = workflow('five', async (ctx, input: { n: number }) => {
  let total = input.n;
  for (let i = 1; i <= 5; i++) {
    total = await ctx.step(`add-${i}`, async () => {
      appendFileSync(log!, `${ctx.runId} add-${i}\n`);
      return total + i;
    });
  }
  return total;
});

const engine = await createEngine({ database: database!, workflows: [five], pollMs: 100, leaseMs: 1000 });
if (point) armCrashPoint(point as CrashPointName, Number(after ?? 0));
const ids = Array.from({ length: Number(runs) }, (_, n) => `r-${n}`);
for (const [n, id] of ids.entries()) await engine.start(five, { n }, { id });
for (const id of ids) await engine.runtime.handle(id).result({ pollMs: 100 });
await engine.close();
