// The server of bench/generate.ts's chunk overhead: `node --import tsx bench/generate-child.ts <database> <runs>`.
// `runledger serve` in all but one setting: it runs `<runs>` runs at once (serve runs 10, and has no flag for more),
// so 100 generations stream side by side. Prints `serving <url>` once it listens; SIGTERM closes it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startServer } from '../dist/server/index.js';
import { timedGeneration } from './generate-flows.js';

const [database, runs] = process.argv.slice(2);
if (!database || !runs) throw new Error('usage: node --import tsx bench/generate-child.ts <database> <runs>');
const server = await startServer({
  database,
  port: 0,
  runConcurrency: Number(runs),
  codeWorkflows: [timedGeneration],
  dataDir: mkdtempSync(join(tmpdir(), 'rl-bench-generate-')),
  logger: pino({ level: 'warn' }),
});
console.log(`serving ${server.url}`);
process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
