import type { Engine } from '../dist/engine.js';

/** Events per second of `appends` sequentially awaited appends of one event each, round-robin over 100 streams. */
export async function appendSequential(engine: Engine, appends: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < appends; i++) {
    await engine.journal.append(`seq-${i % 100}`, [{ type: 'bench.appended', data: { i } }]);
  }
  return perSecond(appends, start);
}

/**
 * The same, split over `appenders` concurrent loops. Each loop writes its own streams, so what is
 * measured is the journal's own contention (positions, the events table), not stream version locks.
 */
export async function appendConcurrent(engine: Engine, appends: number, appenders: number): Promise<number> {
  const each = Math.ceil(appends / appenders);
  const start = performance.now();
  await Promise.all(
    Array.from({ length: appenders }, async (_, a) => {
      for (let i = 0; i < each; i++) {
        await engine.journal.append(`conc-${a}-${i % 12}`, [{ type: 'bench.appended', data: { i } }]);
      }
    }),
  );
  return perSecond(each * appenders, start);
}

/** Events per second of sequential appends of `size` events to one stream each. */
export async function appendBatch(engine: Engine, appends: number, size: number): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < appends; i++) {
    const events = Array.from({ length: size }, (_, j) => ({ type: 'bench.appended', data: { i, j } }));
    await engine.journal.append(`batch-${i % 100}`, events);
  }
  return perSecond(appends * size, start);
}

export function perSecond(count: number, start: number): number {
  return (count * 1000) / (performance.now() - start);
}
