/**
 * A process holding an open debounce window, for the debounce crash test:
 * `node --import tsx e2e/debounce-child.ts <database> <log> [period]`. Starts chat `c` five times (n = 1 … 5: one
 * window, one run, its pass parked and its timer `period` (default 4 s) out), prints `ready` and waits to be killed.
 * With a period, it starts once and dies as its first task, the window's timer, has closed the window and not yet
 * completed.
 */
import { armCrashPoint } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { debouncedEcho } from './debounce-workflows.js';

const [database, log, period] = process.argv.slice(2);
const echo = debouncedEcho(log!, period);
if (period) armCrashPoint('task:beforeComplete');
const engine = await createEngine({ database: database!, workflows: [echo], pollMs: 100, leaseMs: 1000 });
// dying at the timer's close needs a window whose due never moved: one start
for (let n = 1; n <= (period ? 1 : 5); n++) await engine.start(echo, { chat: 'c', n });
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
