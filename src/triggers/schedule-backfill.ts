import { NotFoundError, ValidationError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { mapInput } from './input.js';
import { parseCron, slotAfter } from './schedule-cron.js';
import { BACKFILL_SLOTS, SCHEDULE_VIEW, type Schedule, scheduleStream } from './schedules.js';
import type { RunStarter, Started } from './target.js';

/**
 * Starts a run for each slot of the past window `from` ≤ slot < `to` (ms), at most `BACKFILL_SLOTS`, each with the
 * key of its slot: a slot that fired, or was backfilled, before keeps its run and starts nothing. The runs' input
 * says `backfill: true`; the stream `schedule:<id>` journals the window and its runs (`schedule.backfilled`).
 *
 * @example await backfillSchedule(store, journal, starter, { id, from: Date.parse('2026-01-01'), to: Date.now(), now: Date.now() })
 */
export async function backfillSchedule(
  store: Store,
  journal: Journal,
  starter: RunStarter,
  { id, from, to, now }: { id: string; from: number; to: number; now: number },
): Promise<Array<{ slot: string } & Started>> {
  if (!(from < to)) throw new ValidationError('from', 'must be before to');
  if (to > now) throw new ValidationError('to', 'must not be in the future: a backfill covers a past window');
  return store.transaction(async (tx) => {
    const schedule = (await tx.projectionGet({ name: SCHEDULE_VIEW, key: id })) as Schedule | undefined;
    if (!schedule) throw new NotFoundError(`schedule ${id} not found`);
    const cron = parseCron(schedule.cron, schedule.timezone);
    const slots: number[] = [];
    for (let t = slotAfter(cron, from - 1); t !== null && t < to; t = slotAfter(cron, t)) {
      if (slots.length === BACKFILL_SLOTS)
        throw new ValidationError('from', `the window holds more than ${BACKFILL_SLOTS} slots: narrow it`);
      slots.push(t);
    }
    const runs = [];
    for (const slot of slots) {
      const slotIso = new Date(slot).toISOString();
      const tick = { schedule_id: id, slot: slotIso, catch_up: false, backfill: true };
      const started = await starter.start({
        target: schedule.target,
        input: mapInput(schedule.input, tick),
        key: `${id}:${slotIso}`,
        tx,
        trigger_type: 'schedule',
      });
      runs.push({ slot: slotIso, ...started });
    }
    const window = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
    await journal.append(scheduleStream(id), [{ type: 'schedule.backfilled', data: { ...window, runs } }], { tx });
    return runs;
  });
}
