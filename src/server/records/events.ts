import { z } from 'zod';
import { iso } from '../../iso.js';
import type { StoredEvent } from '../../journal/journal.js';

/* A journaled event as the API shows it: a run's events and a task's events alike. */

export const eventResponse = z.object({
  position: z.int(),
  version: z.int(),
  type: z.string(),
  timestamp: z.iso.datetime().describe('ISO 8601 UTC'),
  data: z.unknown(),
});

export type EventRecord = z.infer<typeof eventResponse>;

/** An event as the API shows it (its stream's id is left out: a run's or a task's events are the run's or task's). */
export function eventRecord(event: StoredEvent): EventRecord {
  return {
    position: event.position,
    version: event.version,
    type: event.type,
    timestamp: iso(event.timestamp),
    data: event.data,
  };
}
