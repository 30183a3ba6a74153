/**
 * A process holding an open debounce window, for the debounce crash test:
 * `node --import tsx e2e/debounce-child.ts <database> <log>`. Starts chat `c` five times (n = 1 … 5: one window, one
 * run, its pass parked and its timer 4 s out), prints `ready` and waits to be killed.
 */
import { createEngine } from '../src/engine.js';
import { debouncedEcho } from './debounce-workflows.js';

const [database, log] = process.argv.slice(2);
const echo = debouncedEcho(log!);
const engine = await createEngine({ database: database!, workflows: [echo], pollMs: 100, leaseMs: 1000 });
for (let n = 1; n <= 5; n++) await engine.start(echo, { chat: 'c', n });
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
