import type { Journal } from '../../journal/journal.js';
import type { NewEvent, Store } from '../../storage/store.js';
import { History, runStream } from './history.js';
import { RUN_EVENT } from '../events.js';

/**
 * Generations of a run's history (`ctx.continueAsNew`). A run's stream keeps every event; a
 * generation starts at its `run.continued` event, and a pass reads the stream from there, so the
 * replay of a run that continued as new costs its current generation only.
 */
export const RUN_GENERATION = 'run-generation';

export interface Generation {
  generation: number;
  /** The stream version the generation starts at (its `run.continued` event). */
  from: number;
}

/** Where a pass of run `id` starts reading. */
export async function generationOf(store: Store, id: string): Promise<Generation> {
  return (
    ((await store.projectionGet({ name: RUN_GENERATION, key: id })) as Generation | undefined) ?? {
      generation: 0,
      from: 1,
    }
  );
}

/**
 * In the transaction that appended `run.continued` (after it, so the stream is locked and every
 * signal committed before it is visible): carries what the ended generation left unconsumed into
 * the new one — signals no wait took, a cancellation not yet acted on — and moves the start. A
 * signal that commits after this transaction lands in the new generation by itself: none is lost.
 */
export async function carryOver(tx: Store, journal: Journal, id: string, from: number): Promise<void> {
  const events = await journal.readStream(runStream(id), { fromVersion: from, limit: 10_000_000, tx });
  let start = events.length - 1;
  while (start > 0 && events[start]!.type !== RUN_EVENT.runContinued) start -= 1;
  const next = events[start]!;
  const ended = new History(events.slice(0, start));
  const carried: NewEvent[] = ended.signals
    .filter((s) => !ended.consumed.has(s.version))
    .map((s) => ({ type: RUN_EVENT.signalSent, data: { name: s.name, payload: s.payload, carriedFrom: s.version } }));
  if (ended.cancelRequested)
    carried.push({ type: RUN_EVENT.runCancelRequested, data: { reason: 'cancelled before the run continued as new' } });
  if (carried.length > 0) await journal.append(runStream(id), carried, { tx });
  const generation: Generation = { generation: (next.data as { generation: number }).generation, from: next.version };
  await tx.projectionPut({ name: RUN_GENERATION, key: id, value: generation });
}
