/**
 * A task worker for the keyed-concurrency crash test: `node --import tsx e2e/task-concurrency-child.ts <database>`.
 * Works queue `cc` (two handlers at once, nothing prefetched, a lease of a minute: a killed worker's slot must come
 * back by the liveness sweep, not by its lease), says `start <task id>` on stdout as a handler starts and `ready` once
 * its engine is open.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createEngine } from '../src/engine.js';

const [database] = process.argv.slice(2);
const engine = await createEngine({ database: database!, workers: false, pollMs: 100 });
engine.work(
  'cc',
  async (_payload, { task }) => {
    process.stdout.write(`start ${task.id}\n`);
    await sleep(300);
    return null;
  },
  { concurrency: 2, prefetch: 0, leaseMs: 60_000 },
);
process.once('SIGTERM', () => void engine.close());
process.stdout.write('ready\n');
