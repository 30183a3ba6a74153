/**
 * A run worker for the zombie test: `node --import tsx e2e/zombie-child.ts <database> <log>`.
 * Its one step holds for 3 s, logs that this process finished it, and returns this process's pid.
 */
import { appendFileSync } from 'node:fs';
import { createEngine } from '../src/engine.js';
import { slow } from './zombie-workflow.js';

const [database, log] = process.argv.slice(2);
const engine = await createEngine({ database: database!, workflows: [slow(log!)], pollMs: 100, leaseMs: 1000 });
await engine.runtime.handle('z-1').result({ pollMs: 100 });
appendFileSync(log!, `${process.pid} saw the end\n`);
await engine.close();
