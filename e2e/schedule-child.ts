/**
 * A scheduler process for the multi-process schedule test: `node --import tsx e2e/schedule-child.ts <database> [reload ms]`.
 * Runs an engine (with run workers) and the trigger service's scheduler on the shared database,
 * prints `ready`, then one line per slot it reached: `slot <schedule id> <slot> <outcome>`, until SIGTERM.
 */
import { randomBytes } from 'node:crypto';
import { createEngine } from '../src/engine.js';
import { workflow } from '../src/runtime/workflow.js';
import { triggers } from '../src/triggers/service.js';
import { createRunStarter } from '../src/triggers/starter.js';
import { storedWorkflows } from '../src/app/workflows.js';

const [database, reloadMs] = process.argv.slice(2);
export const tick = workflow('tick', async (ctx, input: unknown) => ctx.step('note', async () => input));

const engine = await createEngine({ database: database!, workflows: [tick], pollMs: 100 });
const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
const service = triggers(engine, engine.store, {
  starter: createRunStarter({ engine, store: engine.store, workflows }),
  routingEnabled: false,
  scheduler: {
    reloadMs: Number(reloadMs ?? 30_000),
    onFire: (f) => console.log(`slot ${f.schedule_id} ${f.slot} ${f.outcome}`),
  },
  onError: (error) => console.error(`error ${error instanceof Error ? error.stack : String(error)}`),
});
await service.start();
console.log('ready');
await new Promise((stop) => process.once('SIGTERM', stop));
await service.stop();
await engine.close();
console.log('stopped');
