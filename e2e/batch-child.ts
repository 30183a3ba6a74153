/**
 * A process for the batch crash test: `node --import tsx e2e/batch-child.ts <database> <out> [crash point] [after]`.
 * Saves a workflow and starts a batch of 20 inputs with an idempotency key (both idempotent: a restart
 * starts nothing twice), works until the batch has ended, then writes it, the workflow's execution
 * count and the number of batches to <out> as JSON. With a crash point armed it SIGKILLs itself there.
 */
import { writeFileSync } from 'node:fs';
import { storedWorkflows } from '../src/app/workflows.js';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { eventually } from '../src/testing/engine.js';

const [database, out, point, after] = process.argv.slice(2);
const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
const { definitions, executions, batches } = storedWorkflows(engine, { secretKey: Buffer.alloc(32, 7) });
const name = 'batch-crash';
const steps = [{ id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name}}' } }];
const wid = (await definitions.named(name)) ?? (await definitions.create({ name, steps })).id;
if (point) armCrashPoint(point as CrashPointName, Number(after ?? 0));
const inputs = Array.from({ length: 20 }, (_, i) => ({ name: `n${i}` }));
const { batch_id } = await batches.start(wid, { inputs, idempotency_key: 'nightly-1' });
const batch = await eventually(
  async () => ((b) => (b.status === 'running' ? undefined : b))(await batches.get(batch_id)),
  60_000,
);
const { count } = await executions.list(wid, { limit: 100 });
writeFileSync(out!, JSON.stringify({ batch, count, batches: (await batches.list()).count }));
await engine.close();
