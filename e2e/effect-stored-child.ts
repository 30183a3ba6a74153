/**
 * A process for the stored effect crash test:
 * `node --import tsx e2e/effect-stored-child.ts <database> <services> <out> [crash point]`.
 * Saves a workflow whose one `http_request` step POSTs to the mock services as an effect reconciled by a GET of
 * `/_effects` (the call log by Idempotency-Key), executes it once (both idempotent: a restart starts nothing new),
 * works until the execution ended and writes its record to <out> as JSON.
 */
import { writeFileSync } from 'node:fs';
import { storedWorkflows } from '../src/app/workflows.js';
import { armCrashPoint, type CrashPointName } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { eventually } from '../src/testing/engine.js';

const [database, services, out, point] = process.argv.slice(2);
const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
const { definitions, executions } = storedWorkflows(engine, { secretKey: Buffer.alloc(32, 7), allow: ['127.0.0.1'] });
if (point) armCrashPoint(point as CrashPointName);
const name = 'effect-crash';
const definition = {
  name,
  steps: [
    {
      id: 'open',
      type: 'http_request',
      config: {
        method: 'POST',
        url: '{{trigger.services}}/v1/intake/sessions',
        body: { title: 'Q3', content: '# A' },
      },
      effect: { reconcile: { url: '{{trigger.services}}/_effects' } },
    },
  ],
};
const wid = (await definitions.named(name)) ?? (await definitions.create(definition)).id;
const { execution_id: eid } = await executions.execute(wid, {
  trigger_data: { services },
  idempotencyKey: 'effect-1',
});
const ended = ['success', 'partial_success', 'failed', 'cancelled'];
const record = await eventually(async () => {
  const found = await executions.get(wid, eid);
  return ended.includes(found.status) ? found : undefined;
}, 60_000);
writeFileSync(out!, JSON.stringify(record));
await engine.close();
