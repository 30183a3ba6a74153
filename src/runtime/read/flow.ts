import type { Store } from '../../storage/store.js';
import { lineOf, normal, waits } from '../start/line.js';
import { readRunView } from './view.js';

/*
 * The concurrency limits in force, as people read them (the Limits page, `runledger limits list`, /metrics). A key's
 * state is its lock row's and the line of runs waiting its starts and ends write (runtime/start/line.ts);
 * this reads them, never writes.
 */

/** One concurrency key with runs in or waiting: the limit in force, the runs holding a slot, those in line. */
export interface ConcurrencyKeyState {
  /** The slot the runs are counted under: `checkout:42`, or `openai` for a global key. */
  key: string;
  limit: number;
  /** Runs holding a slot, in the order they took it. */
  active: string[];
  /** Runs waiting for a slot, next first. */
  waiting: string[];
  /** When the first run in line was started (ms), null when none waits. */
  oldestWaitingSince: number | null;
}

const PAGE = 500;

/**
 * The concurrency keys with a run in or waiting, by key, up to `max` of them (`truncated` when there were more).
 * `since: false` leaves `oldestWaitingSince` null (no run view read). Every key row is scanned once, so a database
 * of many idle keys pays for them here: it is a read for people and for a metrics scrape.
 *
 * @example const { keys } = await readConcurrency(store, { max: 200 }); // [{ key: 'wf:42', limit: 1, active: [...] }]
 */
export async function readConcurrency(
  store: Store,
  q: { max: number; since?: boolean },
): Promise<{ keys: ConcurrencyKeyState[]; truncated: boolean }> {
  const keys: ConcurrencyKeyState[] = [];
  let after: string | undefined;
  for (;;) {
    const rows = await store.slotList({ limit: PAGE, ...(after === undefined ? {} : { after }) });
    for (const row of rows) {
      const state = normal(row.state);
      if (state.held.length === 0 && waits(state) === 0) continue;
      if (keys.length === q.max) return { keys, truncated: true };
      const slots = {
        limit: state.limit,
        held: state.held,
        waiting: (await lineOf(store, row.slot, state)).map((w) => w.run),
      };
      const first = slots.waiting[0];
      // `since: false` (a metrics scrape) reads no run view
      const since =
        first === undefined || q.since === false ? null : ((await readRunView(store, first))?.createdAt ?? null);
      keys.push({
        key: row.slot,
        limit: slots.limit,
        active: slots.held,
        waiting: slots.waiting,
        oldestWaitingSince: since,
      });
    }
    if (rows.length < PAGE) return { keys, truncated: false };
    after = rows[rows.length - 1]!.slot;
  }
}
