/**
 * A process holding an agent conversation's open batch, for the agent batch crash test:
 * `node --import tsx e2e/agent-batch-child.ts <database> <log> [timeout]`. Receives messages 1 … 5 of conversation `c`
 * (one batch of up to 10, one run, its pass parked and its timeout 30 s out), prints `ready` and waits to be killed.
 * With a timeout, it receives 1 … 3 and dies as its first task, the batch's timer, has closed the batch and not yet
 * completed.
 */
import { armCrashPoint } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { arrival, batchLedger } from './agent-batch-agents.js';

const [database, log, timeout] = process.argv.slice(2);
if (timeout) armCrashPoint('task:beforeComplete');
const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
const ledger = batchLedger(engine, log!, timeout);
for (let n = 1; n <= (timeout ? 3 : 5); n++) await ledger.intake(arrival(String(n)));
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
