import type { Engine } from '../dist/engine.js';
import { enqueueLatency, type Latency } from './latency.js';

const CHUNK = 20;

/**
 * `enqueueLatency` while a neighbour keeps this process busy (issue 48's calm tails): a worker here drains a queue fed
 * at `ratePerS` tasks a second (half what one worker process drains, `drain_per_s / 2`), 20 at a time on a fixed
 * schedule, from a second before the latency tasks to their end. `neighbour_per_s` is the rate it really ran at: below
 * `ratePerS`, the neighbour fell behind and the tail was measured under less load than asked.
 */
export async function latencyUnderLoad(
  engine: Engine,
  ratePerS: number,
  count: number,
  intervalMs: number,
): Promise<Latency & { neighbour_per_s: number }> {
  let handled = 0;
  const worker = engine.work('neighbour', async () => void handled++, { concurrency: 10 });
  let stop = false;
  const every = (CHUNK / ratePerS) * 1000;
  const started = performance.now();
  const feeder = (async () => {
    for (let i = 0; !stop; i++) {
      await sleep(started + i * every - performance.now());
      await engine.queue.enqueueMany(
        'neighbour',
        Array.from({ length: CHUNK }, (_, j) => ({ payload: { n: i * CHUNK + j } })),
      );
    }
  })();
  try {
    await sleep(1000);
    const from = { handled, at: performance.now() };
    const latency = await enqueueLatency(engine, 'latency-load', count, intervalMs);
    const neighbourPerS = ((handled - from.handled) * 1000) / (performance.now() - from.at);
    return { ...latency, neighbour_per_s: neighbourPerS };
  } finally {
    stop = true;
    await feeder;
    await worker.stop();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
