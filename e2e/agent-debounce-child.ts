/**
 * A process holding an agent conversation's open debounce window, for the agent debounce crash test:
 * `node --import tsx e2e/agent-debounce-child.ts <database> <log>`. Receives messages 1 … 4 of conversation `c` (one
 * window, one run, its pass parked and its timer 4 s out), prints `ready` and waits to be killed.
 */
import { createEngine } from '../src/engine.js';
import { arrival, debounceLedger } from './agent-debounce-agents.js';

const [database, log] = process.argv.slice(2);
const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
const ledger = debounceLedger(engine, log!);
for (let n = 1; n <= 4; n++) await ledger.intake(arrival(String(n)));
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
