import type { Pruned, RetentionKind } from '../retention/retention.js';
import { CHANNEL_STREAM_PREFIX } from './message.js';

/**
 * Retention of chat messages (`chat:<age>`): each channel's messages older than the cut-off go,
 * oldest first, except its newest one, so a quiet channel keeps its place in listings and its last
 * activity. Message numbers (`seq`) are not reused: the channel goes on where it was.
 */
export function chatRetention(): RetentionKind {
  return {
    name: 'chat',
    async sweep(store, options) {
      const total: Pruned = { kind: 'chat', runs: 0, events: 0, tasks: 0, other: 0 };
      let after: string | undefined;
      for (;;) {
        const streams = await store.streamList({
          prefix: CHANNEL_STREAM_PREFIX,
          limit: options.batchSize,
          ...(after === undefined ? {} : { after }),
        });
        for (const stream of streams) {
          for (;;) {
            if (options.signal?.aborted) return total;
            const oldest = await options.journal.readStream(stream.streamId, { limit: options.batchSize, tx: store });
            const old = oldest.filter((e) => e.timestamp < options.before && e.version < stream.version);
            if (old.length === 0) break;
            const { events } = await store.transaction((tx) =>
              tx.eventDeleteBefore({ streamId: stream.streamId, beforeVersion: old.at(-1)!.version + 1 }),
            );
            total.events += events;
            total.other += events;
            if (!options.dryRun) await store.storageVacuum({ after: 'batch' });
            if (old.length < oldest.length || oldest.length < options.batchSize) break;
            if (!options.dryRun) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
          }
        }
        if (streams.length < options.batchSize) break;
        after = streams.at(-1)!.streamId;
      }
      return total;
    },
  };
}
