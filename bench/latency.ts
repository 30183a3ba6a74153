import type { Engine } from '../dist/engine.js';

export interface Latency {
  p50: number;
  p95: number;
  p99: number;
  /** From the moment `enqueue` returned (the task is committed) to the handler's start. */
  pickup_p50: number;
  pickup_p99: number;
}

const WARMUP = 10;

/**
 * Milliseconds from the start of `enqueue` to the start of the handler, for `count` tasks enqueued
 * one every `intervalMs` to an idle worker in this process, which only the notification wakes (its
 * fallback poll is 1 s). The first few tasks warm connections and statements and are not counted.
 */
export async function enqueueLatency(
  engine: Engine,
  queue: string,
  count: number,
  intervalMs: number,
): Promise<Latency> {
  const samples: number[] = [];
  const startedAt = new Map<string, number>();
  const committedAt = new Map<string, number>();
  let handled = 0;
  let allHandled!: () => void;
  const done = new Promise<void>((resolve) => (allHandled = resolve));
  const worker = engine.work(queue, async (payload: { t: number; warmup: boolean }, { task }) => {
    const now = wallClock();
    if (!payload.warmup) samples.push(now - payload.t);
    if (!payload.warmup) startedAt.set(task.id, now);
    if (++handled === count + WARMUP) allHandled();
    return null;
  });
  await sleep(200);
  const start = performance.now();
  for (let i = 0; i < count + WARMUP; i++) {
    // A fixed schedule, so a slow enqueue does not push the next one later.
    await sleep(start + i * intervalMs - performance.now());
    const { task } = await engine.queue.enqueue(queue, { t: wallClock(), warmup: i < WARMUP });
    if (i >= WARMUP) committedAt.set(task.id, wallClock());
  }
  await done;
  await worker.stop();
  samples.sort((a, b) => a - b);
  // the handler can start before the enqueue's caller resumes: that pickup counts as 0
  const pickup = [...committedAt].map(([id, t]) => Math.max(0, startedAt.get(id)! - t)).sort((a, b) => a - b);
  return {
    p50: percentile(samples, 0.5),
    p95: percentile(samples, 0.95),
    p99: percentile(samples, 0.99),
    pickup_p50: percentile(pickup, 0.5),
    pickup_p99: percentile(pickup, 0.99),
  };
}

/** Milliseconds since the epoch with sub-millisecond resolution, comparable across processes. */
function wallClock(): number {
  return performance.timeOrigin + performance.now();
}

/** Nearest-rank percentile of sorted samples. */
function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
