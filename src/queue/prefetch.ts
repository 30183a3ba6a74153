/* How many claimed tasks a worker holds beyond the ones it runs (`WorkOptions.prefetch`). */

/** Handlers slower than this on average (ms) get no prefetched tasks: one would wait that long for a slot. */
const PREFETCH_MAX_HANDLER_MS = 100;
/** Beyond `concurrency`, a worker holds only the tasks its slots start within this (ms) at the handlers' pace. */
const PREFETCH_WAIT_MS = 25;
/** A prefetched task not started within this (ms) is given back for another worker to take. */
export const PREFETCH_HOLD_MS = 2_000;
/**
 * How many tasks a worker holds beyond its running ones (see `WorkOptions.prefetch`): none while
 * handlers average `handlerMs` of 100 ms or more, else as many as its slots start within 25 ms at
 * that pace, at least `concurrency`, at most `cap`.
 */
export function prefetchFor(concurrency: number, cap: number, handlerMs: number): number {
  if (handlerMs >= PREFETCH_MAX_HANDLER_MS) return 0;
  const paced = Math.floor((concurrency * PREFETCH_WAIT_MS) / Math.max(handlerMs, 0.001));
  return Math.min(cap, Math.max(paced, concurrency));
}
