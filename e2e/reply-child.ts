/**
 * An AI reply worker process for the chat crash test: `node --import tsx e2e/reply-child.ts <database> <log> [crash]`.
 * Replies with the offline model; each model call appends a line to <log> first, so the parent can
 * count calls across kills. With `crash`, the process dies (SIGKILL) after the model answered and
 * before the reply is written. Runs until SIGTERM.
 */
import { appendFileSync } from 'node:fs';
import { Channels } from '../src/chat/channels.js';
import { startReplyWorker } from '../src/chat/reply.js';
import { armCrashPoint } from '../src/crash.js';
import { createEngine } from '../src/engine.js';
import { offlineModel } from '../src/models/offline.js';
import type { Model } from '../src/runtime/model.js';

const [database, log, crash] = process.argv.slice(2);
const offline = offlineModel();
const model: Model = {
  id: offline.id,
  continuation: offline.continuation,
  stream: (request) => {
    appendFileSync(log!, `call ${process.pid}\n`);
    return offline.stream(request);
  },
};
const engine = await createEngine({ database: database!, pollMs: 100, leaseMs: 1000 });
if (crash) armCrashPoint('reply:afterGenerate');
await startReplyWorker(engine, new Channels(engine.store, engine.journal), model, { from: 'beginning' });
process.stdout.write('ready\n');
await new Promise((stop) => process.once('SIGTERM', stop));
await engine.close();
