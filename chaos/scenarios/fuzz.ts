import { fuzz } from '../fuzz.js';
import { storedCounts } from '../lib/counts.js';
import { emptyFigures } from '../lib/figures.js';
import { freePort, startServe } from '../lib/proc.js';
import type { Scenario } from '../lib/scenario.js';

/**
 * The bad-input fuzzer (`chaos/fuzz.ts`) against a real `runledger serve` (no workers, so only the
 * fuzzer's requests change what is stored): malformed, deep, huge, NUL, lone-surrogate, traversal
 * and bad-escape inputs for every route of its `/openapi.json`, and malformed WebSocket upgrades.
 * 5xx: answers ≥ 500; failed: `/healthz` not answering 200 after a request, a rejected request
 * that stored something, a request left unanswered. The short form sends the first 12 cases of each route.
 */
export const fuzzServer: Scenario = {
  name: 'fuzz',
  backends: ['sqlite', 'postgres'],
  async run(ctx) {
    const database = await ctx.database();
    const port = await freePort();
    const server = await startServe(ctx, { database, port, args: ['--no-workers'] });
    const counts = await storedCounts(database);
    try {
      const report = await fuzz(`http://127.0.0.1:${port}`, { fingerprint: counts.read, ...(ctx.short ? { maxCasesPerRoute: 12 } : {}) });
      const f = emptyFigures();
      const fiveXX = report.failures.filter((x) => /^answered 5/.test(x.problem));
      f.http5xx = fiveXX.length;
      f.failed = report.failures.length - fiveXX.length;
      f.notes.push(
        `${report.requests} requests: ${Object.entries(report.statuses)
          .map(([s, n]) => `${s}×${n}`)
          .join(' ')}`,
      );
      for (const x of report.failures.slice(0, 5)) f.notes.push(`${x.method} ${x.path.slice(0, 80)} (${x.input}): ${x.problem} ${x.body.slice(0, 160)}`);
      return f;
    } finally {
      await counts.close();
      await server.stop();
    }
  },
};
