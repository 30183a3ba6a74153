// A worker process of the rate-limit bench (bench/flow.ts): `node --import tsx bench/flow-child.ts <database>`,
// forked with an IPC channel. It runs the rated workflow's runs; each step sends the time it ran to the parent,
// which kills it when it has counted enough.
import { createEngine } from '../dist/engine.js';
import { rated } from './flow.js';

const [database] = process.argv.slice(2);
if (!database || !process.send) throw new Error('usage: node --import tsx bench/flow-child.ts <database> (with IPC)');
await createEngine({ database, workflows: [rated] });
