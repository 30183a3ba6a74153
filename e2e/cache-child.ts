/**
 * A run worker for the replay-cache test: `node --import tsx e2e/cache-child.ts <database>`. Says
 * `ready` once working; on SIGUSR2 prints its replay cache's `stats <hits> <misses>`.
 */
import { createEngine } from '../src/engine.js';
import { relay } from './cache-workflows.js';

const [database] = process.argv.slice(2);
const engine = await createEngine({ database: database!, workflows: [relay], pollMs: 50, leaseMs: 2000 });
process.on('SIGUSR2', () =>
  process.stdout.write(`stats ${engine.runtime.cache.hits} ${engine.runtime.cache.misses}\n`),
);
process.once('SIGTERM', () => void engine.close().then(() => process.exit(0)));
process.stdout.write('ready\n');
