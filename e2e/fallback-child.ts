/**
 * A process for the fallback crash test: `node --import tsx e2e/fallback-child.ts <database> <services> <out> [crash point]`.
 * Saves the pipeline with its `on_failure` rule and executes it once (both idempotent: a restart
 * starts nothing new), works until the execution and the reruns its failure started have ended,
 * then writes their records to <out> as JSON. With a crash point armed it SIGKILLs itself there.
 */
import { writeFileSync } from 'node:fs';
import { storedWorkflows } from '../src/app/workflows.js';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { eventually } from '../src/testing/engine.js';
import { pipelineWithFallback } from './fallback-pipeline.js';

const [database, services, out, point] = process.argv.slice(2);
const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
const { definitions, executions } = storedWorkflows(engine, { secretKey: Buffer.alloc(32, 7), allow: ['127.0.0.1'] });
if (point) armCrashPoint(point as CrashPointName);
const name = 'fallback-crash';
const wid = (await definitions.named(name)) ?? (await definitions.create({ ...pipelineWithFallback(), name })).id;
const { execution_id: eid } = await executions.execute(wid, {
  trigger_data: { services, content: '# A\nText', title: 'Q3' },
  idempotencyKey: 'crash-1',
});
const ended = (status: string) => ['success', 'partial_success', 'failed', 'cancelled'].includes(status);
const original = await eventually(async () => {
  const found = await executions.get(wid, eid);
  return ended(found.status) ? found : undefined;
}, 60_000);
const reruns = [];
for (const link of original.reruns)
  reruns.push(
    await eventually(async () => {
      const found = await executions.get(wid, link.execution_id);
      return ended(found.status) ? found : undefined;
    }, 60_000),
  );
const { count } = await executions.list(wid, { limit: 100 });
writeFileSync(out!, JSON.stringify({ original, reruns, count }));
await engine.close();
