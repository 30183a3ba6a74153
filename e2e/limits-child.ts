/**
 * A worker process for the limits crash test: `node --import tsx e2e/limits-child.ts <database>`. Runs the limited
 * workflow's passes, prints `ready` and works until it is killed.
 */
import { createEngine } from '../src/engine.js';
import { limited } from './limits-workflows.js';

const [database] = process.argv.slice(2);
await createEngine({ database: database!, workflows: [limited], pollMs: 100, leaseMs: 1000 });
process.stdout.write('ready\n');
setInterval(() => {}, 60_000);
