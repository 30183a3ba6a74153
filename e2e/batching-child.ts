/**
 * A process holding an open batch, for the batching crash test:
 * `node --import tsx e2e/batching-child.ts <database> <log> [timeout]`. Starts five inputs (n = 1 … 5: one batch of
 * up to 10, one run, its pass parked and its timeout 30 s out), prints `ready` and waits to be killed. With a timeout,
 * it starts three and dies as its first task, the batch's timer, has closed the batch and not yet completed.
 */
import { armCrashPoint } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { batchedEcho } from './batching-workflows.js';

const [database, log, timeout] = process.argv.slice(2);
const echo = batchedEcho(log!, timeout);
if (timeout) armCrashPoint('task:beforeComplete');
const engine = await createEngine({ database: database!, workflows: [echo], pollMs: 100, leaseMs: 1000 });
for (let n = 1; n <= (timeout ? 3 : 5); n++) await engine.start(echo, { n });
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
