// http_function_step_p50_ms / _p99_ms: what a step of a durable function over loopback HTTP costs on top of a step of a
// TypeScript workflow. Alone: `node --import tsx bench/functions.ts [sqlite|postgres] [runs]` (needs dist/ built).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createEngine, engineStore } from '../dist/engine.js';
import { Functions } from '../dist/functions/functions.js';
import { workflow } from '../dist/runtime/workflow.js';
import { type Backend, withDatabase } from './databases.js';

const STEPS = 10;
const SECRET = 'bench-function-secret-0123456789';

const steps = workflow('bench.ts-steps', async (ctx) => {
  let last = 0;
  for (let i = 0; i < STEPS; i++) last = await ctx.step(`s${i}`, async () => i);
  return last;
});

/**
 * The smallest endpoint that keeps the protocol (docs/protocol.md, "Durable functions"): it checks the signature,
 * then, as an SDK replaying the handler from the top would, answers the first step the call's `steps` lacks, or
 * `finish` once all ten are there. So a 10-step run is 11 calls.
 */
async function endpoint(): Promise<{ url: string; close: () => Promise<void> }> {
  const read = async (req: IncomingMessage) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    return body;
  };
  const server = createServer(async (req, res) => {
    const body = await read(req);
    const [t, v1] = String(req.headers['runledger-signature'])
      .split(',')
      .map((part) => part.slice(part.indexOf('=') + 1));
    const mac = createHmac('sha256', SECRET).update(`${t}.${body}`).digest();
    if (v1?.length !== 64 || !timingSafeEqual(mac, Buffer.from(v1!, 'hex'))) return res.writeHead(401).end();
    const call = JSON.parse(body) as { steps: Record<string, { data: number }> };
    const done = Object.keys(call.steps).length;
    const command = done < STEPS ? { op: 'step', id: `s${done}`, data: done } : { op: 'finish', data: STEPS - 1 };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(command));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((done) => server.close(() => done())) };
}

/**
 * One run at a time, a 10-step function and a 10-step TypeScript workflow taking turns (so a change of load meets
 * both), after `warmup` uncounted pairs. Per step: the difference of the two run times' percentiles, over 10.
 */
export async function benchFunctions(
  database: string,
  runs: number,
  warmup = 5,
): Promise<{ http_function_step_p50_ms: number; http_function_step_p99_ms: number }> {
  const engine = await createEngine({ database, workflows: [steps] });
  const target = await endpoint();
  try {
    const functions = new Functions(engine, engineStore(engine), { allow: ['127.0.0.1'] });
    await functions.registry.register({ name: 'bench-steps', url: target.url, secret: SECRET });
    const timed = async (start: () => Promise<{ result(): Promise<unknown> }>) => {
      const started = performance.now();
      const output = await (await start()).result();
      if (output !== STEPS - 1) throw new Error(`a run returned ${JSON.stringify(output)}, expected ${STEPS - 1}`);
      return performance.now() - started;
    };
    const fn = () => timed(async () => engine.runtime.handle((await functions.start('bench-steps', null)).runId));
    const ts = () => timed(() => engine.start(steps, null));
    const fnMs: number[] = [];
    const tsMs: number[] = [];
    for (let i = 0; i < warmup + runs; i++) {
      const pair = [await fn(), await ts()] as const;
      if (i < warmup) continue;
      fnMs.push(pair[0]);
      tsMs.push(pair[1]);
    }
    const per = (p: number) => (percentile(fnMs, p) - percentile(tsMs, p)) / STEPS;
    return { http_function_step_p50_ms: per(0.5), http_function_step_p99_ms: per(0.99) };
  } finally {
    await engine.close();
    await target.close();
  }
}

/** Nearest-rank percentile. */
function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const backend = (process.argv[2] ?? 'sqlite') as Backend;
  const runs = Number(process.argv[3] ?? 50);
  const m = await withDatabase(backend, (database) => benchFunctions(database, runs));
  console.log(
    `${backend} http_function_step_p50_ms: ${m.http_function_step_p50_ms.toFixed(2)}  http_function_step_p99_ms: ${m.http_function_step_p99_ms.toFixed(2)} (${runs} runs of each)`,
  );
}
