import type { Journal } from '../journal/journal.js';
import { RUN_EVENT } from '../runtime/events.js';
import { BATCHES, batchLive } from '../runtime/start/batch.js';
import { DEBOUNCE_WINDOWS, debounceLive } from '../runtime/start/debounce.js';
import { THROTTLE_SLOTS, throttleLive } from '../runtime/start/throttle.js';
import type { Store } from '../storage/store.js';
import type { Pruned, RetentionKind, SweepOptions } from './retention.js';

/** The keys of throttled, debounced and batched starts: each a stream (its lock) and a projection row (its state). */
const KEYS = [
  { prefix: 'throttle:', state: THROTTLE_SLOTS, live: throttleLive },
  { prefix: 'debounce:', state: DEBOUNCE_WINDOWS, live: (tx: Store, stream: string) => debounceLive(tx, stream) },
  { prefix: 'batching:', state: BATCHES, live: (tx: Store, stream: string) => batchLive(tx, stream) },
] as const;

type Key = (typeof KEYS)[number];

/**
 * The `keys` kind: a throttled, debounced or batched key's stream and state, once the key was last started before the age
 * and holds nothing live (no open debounce window or batch, no throttle slot still to come). Such a key is as one never seen,
 * so a later start of it begins afresh. Keys of concurrency limits (`ordering:`) are not pruned here.
 *
 * @example retention.register(keysKind()); await retention.prune({ keys: 7 * 86_400_000 })
 */
export function keysKind(): RetentionKind {
  return {
    name: 'keys',
    async sweep(store, options) {
      const total: Pruned = { kind: 'keys', runs: 0, events: 0, tasks: 0, other: 0 };
      for (const key of KEYS) {
        let after: string | undefined;
        for (;;) {
          if (options.signal?.aborted) return total;
          const page = await store.streamList({
            prefix: key.prefix,
            limit: options.batchSize,
            ...(after === undefined ? {} : { after }),
          });
          const idle = page.filter((s) => s.updatedAt < options.before).map((s) => s.streamId);
          if (idle.length > 0) {
            const batch = await store.transaction((tx) => forget(tx, options.journal, key, idle));
            total.events += batch.events;
            total.other += batch.other;
            if (!options.dryRun && batch.other > 0) await store.storageVacuum({ after: 'batch' });
          }
          if (page.length < options.batchSize) break;
          after = page.at(-1)!.streamId;
          await pause(options);
        }
      }
      return total;
    },
  };
}

/**
 * Deletes the keys of `streams` that hold nothing live. Each is checked again under its lock, taken as a start takes
 * it (an append to its stream): a start that committed first is seen, one that comes after waits for this
 * transaction and then finds no state, as for a new key. Deleting before the lock could leave a start's own events
 * behind a deleted stream. A key that became live keeps its state (and the lock's event).
 */
async function forget(tx: Store, journal: Journal, key: Key, streams: string[]): Promise<Omit<Pruned, 'kind'>> {
  const out = { runs: 0, events: 0, tasks: 0, other: 0 };
  for (const stream of streams) {
    if (await key.live(tx, stream, await tx.now())) continue;
    await journal.append(stream, [{ type: RUN_EVENT.keyPruning, data: {} }], { tx });
    if (await key.live(tx, stream, await tx.now())) continue;
    const state = await tx.projectionGet({ name: key.state, key: stream });
    if (state !== undefined) await tx.projectionDelete({ name: key.state, key: stream });
    const { events } = await tx.streamDelete({ streamIds: [stream] });
    // the lock's own event is not one the key held
    out.events += events - 1;
    out.other += 1;
  }
  return out;
}

const pause = (options: SweepOptions) =>
  options.dryRun || options.pauseMs <= 0
    ? Promise.resolve()
    : new Promise((resolve) => setTimeout(resolve, options.pauseMs));
