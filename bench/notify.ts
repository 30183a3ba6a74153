import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createEngine, engineStore } from '../dist/engine.js';
import { TerminalError } from '../dist/errors.js';
import { notifications } from '../dist/notifications/service.js';
import { workflow } from '../dist/runtime/workflow.js';
import { withDatabase, type Backend } from './databases.js';

export interface NotifySizes {
  /** Runs that fail, each notified once. */
  runs: number;
  /** Runs started at once. */
  inFlight: number;
}

/**
 * `notify_delivery_p99_ms`: from the moment a run's step throws (the run then fails) to the moment a loopback
 * webhook receives its `run.failed` delivery, p99 over `runs` runs, `inFlight` at a time. It covers the run's
 * failure commit, the notifications' subscription (woken by the commit) enqueueing the delivery, the delivery
 * worker claiming it and the signed POST. Also `notify_delivery_p50_ms`.
 */
export async function benchNotify(database: string, sizes: NotifySizes): Promise<Record<string, number>> {
  const threw = new Map<string, number>();
  const latencies: number[] = [];
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => (done = resolve));
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const at = performance.now();
      res.writeHead(200).end();
      const id = (JSON.parse(body) as { run: { id: string } }).run.id;
      const start = threw.get(id);
      if (start === undefined) return;
      threw.delete(id);
      latencies.push(at - start);
      if (latencies.length === sizes.runs) done();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const fails = workflow('bench-fails', async (ctx) => {
    await ctx.step('fail', async () => {
      threw.set(ctx.runId, performance.now());
      throw new TerminalError('bench');
    });
  });
  const engine = await createEngine({ database, workflows: [fails] });
  try {
    const n = notifications(engine, engineStore(engine), { allow: ['127.0.0.1'] });
    await n.start();
    await n.registry.create({ name: 'bench', url, events: ['run.failed'] });
    let next = 0;
    await Promise.all(
      Array.from({ length: sizes.inFlight }, async () => {
        while (next < sizes.runs) {
          next += 1;
          const run = await engine.start(fails, {});
          await engine.runs.wait(run.id, { timeoutMs: 60_000 });
        }
      }),
    );
    const timeout = setTimeout(done, 60_000);
    await all;
    clearTimeout(timeout);
    if (latencies.length < sizes.runs) throw new Error(`received ${latencies.length} of ${sizes.runs} deliveries`);
    latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))]! * 100) / 100;
    return { notify_delivery_p50_ms: at(0.5), notify_delivery_p99_ms: at(0.99) };
  } finally {
    await engine.close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
}

// `npx tsx bench/notify.ts [sqlite|postgres] [runs]`: this bench alone (after `tsc -p tsconfig.build.json`)
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = (process.argv[2] ?? 'sqlite') as Backend;
  const runs = Number(process.argv[3] ?? 200);
  const result = await withDatabase(backend, (database) =>
    benchNotify(database, { runs, inFlight: Number(process.argv[4] ?? 10) }),
  );
  console.log(JSON.stringify({ backend, runs, ...result }));
}
