/**
 * A run worker of one deploy for the versioning test: `node --import tsx e2e/version-child.ts <database> v1|v2`.
 * Says `ready` once its engine works; on SIGTERM it closes the engine (a clean shutdown: it stops
 * advertising its version) and exits.
 */
import { createEngine } from '../src/engine.js';
import { orderV1, orderV2 } from './version-workflows.js';

const [database, deploy] = process.argv.slice(2);
const engine = await createEngine({
  database: database!,
  workflows: [deploy === 'v1' ? orderV1 : orderV2],
  pollMs: 100,
  leaseMs: 2000,
});
process.once('SIGTERM', () => void engine.close().then(() => process.exit(0)));
process.stdout.write('ready\n');
