import type { Journal } from '../../journal/journal.js';
import type { Store } from '../../storage/store.js';
import { runsNeedingPatch } from '../pass/patches.js';
import type { Runtime } from '../runtime.js';
import { liveTags } from '../start/versions.js';
import { readConcurrency } from './flow.js';
import { newestRuns } from './overview.js';
import { listRecentRuns, listRuns, runTail, waitForRun, type RecentRunPage, type RunPage } from './runs.js';
import { readRunView, type RunView } from './view.js';

/**
 * The read door of runs (`engine.runs`): the one way above the runtime to list, tail, wait for and
 * view runs. Faces (server, CLI, dashboard) and features read runs through it, never the store.
 *
 * @example const { runs, last_key } = await engine.runs.listRecent({ limit: 20 });
 */
export class RunReads {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
    private readonly runtime: Runtime,
  ) {}

  /** A run as people read it, its big values whole. */
  view(id: string): Promise<RunView> {
    return this.runtime.view(id);
  }

  /** A run's view as stored (big values as blob references), undefined when there is no such run. */
  find(id: string): Promise<RunView | undefined> {
    return readRunView(this.store, id);
  }

  /** Runs of every kind, newest first (see `listRecentRuns`). */
  listRecent(q: RecentRunPage) {
    return listRecentRuns(this.store, q);
  }

  /** Runs in descending id order with a filter applied in the process (see `listRuns`). */
  list(q: RunPage) {
    return listRuns(this.store, q);
  }

  /** A run's events after version `after`, page by page, to its end. */
  tail(runId: string, after: number) {
    return runTail(this.store, this.journal, runId, after);
  }

  /** The run once it has ended, or as it is when `timeoutMs` passes. */
  wait(id: string, options: { timeoutMs: number; pollMs?: number; signal?: AbortSignal }): Promise<RunView> {
    return waitForRun(this.store, this.journal, id, options);
  }

  /** The run views, newest id first, `page` per read, up to `max` (the overview's scan; see `newestRuns`). */
  newest(q: { max: number; page: number }): AsyncGenerator<RunView[]> {
    return newestRuns(this.store, q);
  }

  /** The runs that may still take the old branch of change `id` (see `runsNeedingPatch`): empty, the old branch can go. */
  needingPatch(id: string, options: { workflow?: string; limit?: number } = {}): Promise<RunView[]> {
    return runsNeedingPatch(this.store, id, options);
  }

  /** The version tags some live worker has (a run's record says which version it waits for: `missingVersion`). */
  liveTags(): Promise<Set<string>> {
    return liveTags(this.store);
  }

  /** The concurrency keys with a run in or waiting, up to `max` (see `readConcurrency`). */
  concurrency(q: { max: number; since?: boolean }) {
    return readConcurrency(this.store, q);
  }
}
