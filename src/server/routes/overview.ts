import { z } from 'zod';
import { toMs } from '../../duration.js';
import type { Engine } from '../../engine.js';
import { ValidationError } from '../../errors.js';
import { isTerminal } from '../../runtime/read/view.js';
import { route, type Route } from '../route.js';

/** The newest runs the overview reads: it costs one indexed page read of this many rows, however many runs are stored. */
const SCAN_RUNS = 2_000;
const BUCKETS = 60;
const MAX_WINDOW_MS = 7 * 24 * 3600_000;

const query = z
  .object({
    window: z
      .string()
      .default('1h')
      .transform((value, ctx) => {
        try {
          const ms = toMs(value, 'window');
          if (ms >= 60_000 && ms <= MAX_WINDOW_MS) return ms;
          ctx.addIssue({ code: 'custom', message: `must be between 1m and 7d (got '${value}')` });
        } catch (error) {
          ctx.addIssue({
            code: 'custom',
            message: error instanceof ValidationError ? (error.problems[0]?.message ?? error.message) : String(error),
          });
        }
        return z.NEVER;
      })
      .describe("the time window: '15m', '1h', '24h' (1m to 7d); 60 buckets"),
  })
  .strict();

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * The dashboard's overview, computed from what the store already holds, cheaply: the newest
 * runs (one page of the run views, newest id first), the task counts, the oldest ready task and
 * the parked events of each subscription.
 */
export function overviewRoutes(engine: Engine): Route[] {
  return [
    route({
      method: 'get',
      path: '/overview',
      tag: 'overview',
      summary: `Runs ended per bucket by outcome, step latency p50/p99, runs in flight, queue depth and the oldest ready task, parked events: over a window, from the newest ${SCAN_RUNS} runs`,
      query,
      status: 200,
      errors: [400],
      handle: async ({ query }) => {
        const now = await engine.operator.now();
        const windowMs = query.window;
        const bucketMs = Math.ceil(windowMs / BUCKETS);
        const since = now - windowMs;
        const bucketOf = (t: number) => Math.min(BUCKETS - 1, Math.floor((t - since) / bucketMs));
        const ended = Array.from({ length: BUCKETS }, (_, i) => ({
          at: new Date(since + i * bucketMs).toISOString(),
          by_status: {} as Record<string, number>,
        }));
        const inFlight: Record<string, number> = {};
        const latencies: number[] = [];
        let scanned = 0;
        // one page of SCAN_RUNS: one indexed read
        for await (const views of engine.runs.newest({ max: SCAN_RUNS, page: SCAN_RUNS }))
          for (const view of views) {
            scanned++;
            if (!isTerminal(view.status)) inFlight[view.status] = (inFlight[view.status] ?? 0) + 1;
            else if (view.updatedAt >= since) {
              const by = ended[bucketOf(view.updatedAt)]!.by_status;
              by[view.status] = (by[view.status] ?? 0) + 1;
            }
            // a long run's view holds its last ended steps only (docs/longrun.md): a sample, as the runs are
            for (const step of view.steps ?? [])
              if (step.durationMs !== null && step.finishedAt !== null && step.finishedAt >= since)
                latencies.push(step.durationMs);
          }
        latencies.sort((a, b) => a - b);
        const status = await engine.operator.status();
        const [oldest] = await engine.operator.tasks({ state: 'ready', limit: 1 });
        const parkedBuckets = Array.from({ length: BUCKETS }, (_, i) => ({
          at: new Date(since + i * bucketMs).toISOString(),
          count: 0,
        }));
        let parkedNow = 0;
        for (const sub of await engine.operator.subscriptions()) {
          for (const p of await engine.operator.parked(sub.name)) {
            if (p.status === 'parked') parkedNow++;
            if (p.parkedAt >= since) parkedBuckets[bucketOf(p.parkedAt)]!.count++;
          }
        }
        return {
          now: new Date(now).toISOString(),
          window_ms: windowMs,
          bucket_ms: bucketMs,
          runs_scanned: scanned,
          runs_ended: ended,
          runs_in_flight: inFlight,
          step_latency: {
            count: latencies.length,
            p50_ms: percentile(latencies, 50),
            p99_ms: percentile(latencies, 99),
          },
          queue: {
            ...status.tasks,
            oldest_ready: oldest
              ? {
                  id: oldest.id,
                  queue: oldest.queue,
                  created_at: new Date(oldest.createdAt).toISOString(),
                  run_at: new Date(oldest.runAt).toISOString(),
                }
              : null,
          },
          parked: { now: parkedNow, buckets: parkedBuckets },
        };
      },
    }),
  ];
}
