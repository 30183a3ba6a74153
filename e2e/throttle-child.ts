/**
 * A process holding throttled runs, for the throttle crash test: `node --import tsx e2e/throttle-child.ts <database>
 * <log>`. Starts user `u` six times (n = 1 … 6: slots one second apart, the last 5 s out), writes `started <run id>`
 * to the log once each start returned, prints `ready` and works their runs until it is killed.
 */
import { appendFileSync } from 'node:fs';
import { createEngine } from '../src/engine.js';
import { throttledEcho } from './throttle-workflows.js';

const [database, log] = process.argv.slice(2);
const echo = throttledEcho(log!);
const engine = await createEngine({ database: database!, workflows: [echo], pollMs: 100, leaseMs: 1000 });
for (let n = 1; n <= 6; n++) appendFileSync(log!, `started ${(await engine.start(echo, { user: 'u', n })).id}\n`);
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
