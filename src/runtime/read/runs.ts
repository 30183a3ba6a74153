import { NotFoundError, ValidationError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import type { ProjectionMatch } from '../../storage/projections.js';
import type { Store, StoredEvent } from '../../storage/store.js';
import { runStream } from '../pass/history.js';
import { isTerminal, readRunView, RUN_VIEW, runView, type RunView } from './view.js';
import { TERMINAL_RUN_EVENTS } from '../events.js';

/** Reading runs as they go: a run's events to its end, waiting for its end, and the list of runs. */

/** Events per read of a live feed: with one chunk queued and one being written, the most a slow client holds. */
export const PAGE = 100;
/** Runs a filtered listing examines per call. */
const SCAN_RUNS = 1_000;
/** A generated run id (`run_01J…`, `ex_01J…`): a place in the listing even once retention deleted its run. */
const GENERATED_ID = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/;
/** How often a waiter looks without a wake-up (one lost, a PostgreSQL reconnect gap, or SQLite written by another process). */
export const FALLBACK_MS = 5_000;
const ENDS = new Set<string>(TERMINAL_RUN_EVENTS);

async function existing(store: Store, id: string): Promise<RunView> {
  const view = await readRunView(store, id);
  if (!view) throw new NotFoundError(`run ${id} not found`);
  return view;
}

/**
 * A run's events after version `after`, page by page, ending with its terminal event: `end` says
 * the run has ended and everything up to its end was returned.
 */
export function runTail(
  store: Store,
  journal: Journal,
  runId: string,
  after: number,
): { next(): Promise<{ events: StoredEvent[]; end: boolean }> } {
  const streamId = runStream(runId);
  const read = () => journal.readStream(streamId, { fromVersion: after + 1, limit: PAGE });
  return {
    next: async () => {
      let events = await read();
      if (events.length === 0) {
        // the view before the events: when it says the run ended, its last event committed before this read
        const view = await readRunView(store, runId);
        events = await read();
        if (events.length === 0) return { events, end: !view || isTerminal(view.status) };
      }
      const end = events.findIndex((e) => ENDS.has(e.type));
      if (end >= 0) events = events.slice(0, end + 1);
      after = events.at(-1)!.version;
      return { events, end: end >= 0 };
    },
  };
}

/**
 * The run once it has ended, or as it is when `timeoutMs` passes (or the client leaves). It sleeps
 * until the journal's wake-up for the run's stream and reads the view once per wake-up (or per
 * `pollMs`, the fallback for a lost wake-up); other runs' events do not wake it.
 */
export async function waitForRun(
  store: Store,
  journal: Journal,
  id: string,
  options: { timeoutMs: number; pollMs?: number; signal?: AbortSignal },
): Promise<RunView> {
  const deadline = Date.now() + options.timeoutMs;
  const streamId = runStream(id);
  const watch = await journal.watch((s) => s === streamId);
  const leave = () => watch.wakeup.wake();
  options.signal?.addEventListener('abort', leave);
  try {
    let view = await existing(store, id);
    while (!isTerminal(view.status)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0 || options.signal?.aborted) return view;
      await watch.wakeup.wait(Math.min(remaining, options.pollMs ?? FALLBACK_MS));
      view = await existing(store, id);
    }
    return view;
  } finally {
    options.signal?.removeEventListener('abort', leave);
    await watch.stop();
  }
}

export interface RunPage {
  limit: number;
  last_key?: string | undefined;
  /** Keeps the runs it returns true for; without it every run counts. */
  filter?: (view: RunView) => boolean;
}

/**
 * Runs in descending id order. Filters are applied to at most SCAN_RUNS runs per call, so a page
 * can hold fewer than `limit` runs (even none) while `last_key` is set: keep paging until it is null.
 * A `last_key` is a generated run id or the id of a run that exists (ids can be chosen: `'garbage'`
 * could be one); anything else is a ValidationError, not a page that silently starts somewhere.
 */
export async function listRuns(
  store: Store,
  q: RunPage,
): Promise<{ runs: RunView[]; count: number; last_key: string | null }> {
  if (q.last_key !== undefined && !GENERATED_ID.test(q.last_key) && !(await readRunView(store, q.last_key))) {
    throw new ValidationError('last_key', `'${q.last_key}' is not the last_key of a previous page (the id of a run)`);
  }
  const size = q.filter ? 200 : q.limit + 1;
  const runs: RunView[] = [];
  const page = (last_key: string | null) => ({ runs, count: runs.length, last_key });
  let last = q.last_key;
  for (let scanned = 0; ; ) {
    const rows = await store.projectionList({
      name: RUN_VIEW,
      limit: size,
      backwards: true,
      ...(last !== undefined ? { before: last } : {}),
    });
    for (const row of rows) {
      const view = runView(row.value)!;
      if (!q.filter || q.filter(view)) {
        if (runs.length === q.limit) return page(last ?? null);
        runs.push(view);
      }
      last = row.key;
    }
    scanned += rows.length;
    if (rows.length < size) return page(null);
    if (scanned >= SCAN_RUNS) return page(last ?? null);
  }
}

export interface RecentRunPage {
  limit: number;
  /** The `last_key` of the previous page. */
  last_key?: string | undefined;
  /** Filters the database applies (see `Store.projectionListRecent`). */
  where?: ProjectionMatch[][];
  createdAfter?: number | undefined;
  createdBefore?: number | undefined;
}

/**
 * Runs of every kind, newest first: by creation time descending, ties by id descending (ids of
 * different kinds do not sort by time together) — the order of every run list (API, CLI,
 * dashboard). Filtered in the database: every page is full unless it is the last, and costs about
 * one index range however many runs are stored. `last_key` is `<createdAt>~<id>`; a run's id
 * alone (what the older id-ordered listing gave) continues after that run.
 */
export async function listRecentRuns(
  store: Store,
  q: RecentRunPage,
): Promise<{ runs: RunView[]; count: number; last_key: string | null }> {
  const rows = await store.projectionListRecent({
    name: RUN_VIEW,
    limit: q.limit + 1,
    ...(q.last_key !== undefined ? { before: await runCursor(store, q.last_key) } : {}),
    ...(q.where ? { where: q.where } : {}),
    ...(q.createdAfter !== undefined ? { createdAfter: q.createdAfter } : {}),
    ...(q.createdBefore !== undefined ? { createdBefore: q.createdBefore } : {}),
  });
  const runs = rows.slice(0, q.limit).map((row) => row.value as RunView);
  const last = runs.at(-1);
  return { runs, count: runs.length, last_key: rows.length > q.limit && last ? `${last.createdAt}~${last.id}` : null };
}

async function runCursor(store: Store, key: string): Promise<{ createdAt: number; key: string }> {
  const match = /^(\d{1,15})~(.+)$/.exec(key);
  if (match) return { createdAt: Number(match[1]), key: match[2]! };
  const run = key.length <= 200 ? await readRunView(store, key) : undefined;
  if (!run) throw new ValidationError('last_key', `'${key}' is not a last_key of this listing (<createdAt>~<id>)`);
  return { createdAt: run.createdAt, key: run.id };
}
