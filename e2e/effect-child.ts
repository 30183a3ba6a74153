/**
 * A worker process for the effect crash test:
 * `node --import tsx e2e/effect-child.ts <database> <log> <reconcile|person> <ended|waiting> [crash point]`.
 * Starts run `pay-<mode>` (idempotent: a restart starts nothing new) of a workflow whose one step is a side effect:
 * it appends its idempotency key to <log> (the outside world). `reconcile` reads the log back; `person` marks the
 * step atMostOnce with no reconcile. Works until the run ended (or, `waiting`, until it waits for a person).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';

const [database, log, mode, until, point] = process.argv.slice(2);
const charged = (key: string) => readFileSync(log!, 'utf8').split('\n').includes(key);

const pay = workflow(`pay-${mode}`, async (ctx, input: { amount: number }) =>
  ctx.step(
    'charge',
    async ({ idempotencyKey }) => {
      appendFileSync(log!, `${idempotencyKey}\n`);
      return `charged ${input.amount} as ${idempotencyKey}`;
    },
    {
      input,
      effect:
        mode === 'reconcile'
          ? {
              reconcile: async (key) =>
                charged(key) ? { happened: true, output: `reconciled ${key}` } : { happened: false },
            }
          : { atMostOnce: true },
    },
  ),
);

const engine = await createEngine({ database: database!, workflows: [pay], pollMs: 100, leaseMs: 1000 });
if (point) armCrashPoint(point as CrashPointName);
const id = `pay-${mode}`;
await engine.start(pay, { amount: 5 }, { id });
for (;;) {
  const view = await engine.run(id);
  if (view.status === 'success' || view.status === 'failed') break;
  if (until === 'waiting' && view.effectWait) break;
  await new Promise((resolve) => setTimeout(resolve, 100));
}
await engine.close();
