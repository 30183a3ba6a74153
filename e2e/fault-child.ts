/**
 * A run worker for the fault tests: `node --import tsx e2e/fault-child.ts <database> <log> [concurrency]`.
 * Works the runs of the fault workflows (lease 1 s, so a killed worker's runs are taken over
 * quickly; `concurrency` runs at once, else the engine's default), says `ready` on stdout once its
 * engine is open, and stops on SIGTERM or when killed.
 */
import { createEngine } from '../src/engine.js';
import { RUN_QUEUE } from '../src/runtime/runtime.js';
import { faultWorkflows } from './fault-workflows.js';

const [database, log, concurrency] = process.argv.slice(2);
const workflows = Object.values(faultWorkflows(log!));
const engine = await createEngine({
  database: database!,
  workflows,
  pollMs: 100,
  leaseMs: 1000,
  workers: concurrency === undefined,
});
if (concurrency !== undefined)
  engine.work(RUN_QUEUE, engine.runtime.execute, { leaseMs: 1000, concurrency: Number(concurrency) });
process.once('SIGTERM', () => void engine.close());
process.stdout.write('ready\n');
