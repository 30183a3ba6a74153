import type { Store } from './store.js';
import type { EngineEvents } from '../observe/events.js';

/**
 * `store` with its top-level transactions timed (`store:transaction`). Every other method is the
 * store's own (inherited), so nothing else changes; with no listener the timing is skipped.
 */
export function timedStore(store: Store, events: EngineEvents): Store {
  const timed = Object.create(store) as Store & { transaction: Store['transaction'] };
  timed.transaction = async (fn) => {
    if (!events.has('store:transaction')) return store.transaction(fn);
    const started = performance.now();
    let ok = false;
    try {
      const result = await store.transaction(fn);
      ok = true;
      return result;
    } finally {
      events.emit('store:transaction', { durationMs: performance.now() - started, ok });
    }
  };
  return timed;
}
