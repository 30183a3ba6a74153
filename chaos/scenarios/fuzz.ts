import { fuzz } from '../fuzz.js';
import { fuzzFrames } from '../fuzz-frames.js';
import { storedCounts } from '../lib/counts.js';
import { emptyFigures } from '../lib/figures.js';
import { freePort, startServe } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';

/**
 * The bad-input fuzzer (`chaos/fuzz.ts`) against a real `runledger serve` (no workers, so only the
 * fuzzer's requests change what is stored): malformed, deep, huge, NUL, lone-surrogate, traversal
 * and bad-escape inputs for every route of its `/openapi.json`, and malformed WebSocket upgrades;
 * then seeded malformed WebSocket frames after valid upgrades (`chaos/fuzz-frames.ts`).
 * 5xx: answers ≥ 500 (over the socket: an internal error frame, close 1011); failed: `/healthz` not
 * answering 200 after a request or connection, a rejected request that stored something, a request
 * left unanswered, a socket neither closed nor answering a ping, a well-behaved client that stops
 * receiving; crashed: `serve` died (one frame used to end it). The short form sends the first 12
 * cases of each route and 150 frame connections; the full one 1,500.
 */
const FUZZ_TOKEN = 'chaos-fuzz-token-0123456789';

export const fuzzServer: Scenario = {
  name: 'fuzz',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const port = await freePort();
    // with a token: a key the fuzzer creates (`POST /keys` with a good body) would otherwise turn authentication on
    // and every request after it would stop at the 401, its bad input never read
    const env = { RUNLEDGER_TOKEN: FUZZ_TOKEN };
    const headers = { authorization: `Bearer ${FUZZ_TOKEN}` };
    const server = await startServe(ctx, { database, port, args: ['--no-workers'], env });
    const counts = await storedCounts(database);
    try {
      const report = await fuzz(`http://127.0.0.1:${port}`, {
        fingerprint: counts.read,
        headers,
        ...(ctx.short ? { maxCasesPerRoute: 12 } : {}),
      });
      // after the request fuzzer: its fingerprint would count the posts that frames store
      const framesStarted = Date.now();
      const frames = await fuzzFrames(`http://127.0.0.1:${port}`, {
        random: ctx.random,
        headers,
        connections: ctx.size(1_500, 150),
        deadline: ctx.deadline - 20_000,
      });
      report.failures.push(...frames.failures);
      const f = emptyFigures();
      const fiveXX = report.failures.filter((x) => /^answered 5/.test(x.problem));
      f.http5xx = fiveXX.length;
      f.failed = report.failures.length - fiveXX.length;
      f.notes.push(
        `${report.requests} requests: ${Object.entries(report.statuses)
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
        `${frames.connections} WebSocket connections, ${frames.frames} frames in ${((Date.now() - framesStarted) / 1000).toFixed(1)} s, ended by: ${Object.entries(
          frames.outcomes,
        )
          .sort(([, a], [, b]) => b - a)
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
      );
      for (const x of report.failures.slice(0, 5))
        f.notes.push(`${x.method} ${x.path.slice(0, 80)} (${x.input}): ${x.problem} ${x.body.slice(0, 160)}`);
      return f;
    } finally {
      await counts.close();
      // a server that stopped answering may still be exiting: its exit must arrive before stop() calls it told, or the crash goes uncounted
      const answers = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => true,
        () => false,
      );
      if (!answers) await Promise.race([server.exited, new Promise((r) => setTimeout(r, 2_000))]);
      await server.stop();
    }
  },
};
