import type { RetentionKind, Pruned } from '../retention/retention.js';
import { EVENT_INDEX, EVENT_RECEIVED, EVENT_ROUTED, indexKey } from './events.js';

/**
 * Retention of inbound events (`events:<age>`): an event's stream and its row in the `GET /events`
 * index go once it has been routed and was received before the cut-off. An event not yet routed
 * stays, whatever its age. The runs it started are not touched (they have their own kind).
 */
export function eventsRetention(): RetentionKind {
  return {
    name: 'events',
    async sweep(store, options) {
      const total: Pruned = { kind: 'events', runs: 0, events: 0, tasks: 0, other: 0 };
      let from = 1;
      for (;;) {
        if (options.signal?.aborted) break;
        const received = await options.journal.readAll({
          types: [EVENT_RECEIVED],
          fromPosition: from,
          limit: options.batchSize,
          tx: store,
        });
        const old = received.filter((e) => e.timestamp < options.before);
        if (old.length > 0) {
          const batch = await store.transaction(async (tx) => {
            const routed = [];
            for (const event of old) {
              const [last] = await options.journal.readStream(event.streamId, { backwards: true, limit: 1, tx });
              if (last?.type === EVENT_ROUTED) routed.push(event);
            }
            const { events } = await tx.streamDelete({ streamIds: routed.map((e) => e.streamId) });
            for (const event of routed) await tx.projectionDelete({ name: EVENT_INDEX, key: indexKey(event.position) });
            return { count: routed.length, events };
          });
          total.other += batch.count;
          total.events += batch.events;
          if (!options.dryRun && batch.count > 0) await store.storageVacuum({ after: 'batch' });
        }
        if (received.length < options.batchSize || old.length < received.length) break;
        from = received.at(-1)!.position + 1;
        if (!options.dryRun) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      }
      return total;
    },
  };
}
