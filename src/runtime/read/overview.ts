import type { Journal } from '../../journal/journal.js';
import type { Store } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import { RUN_QUEUE } from '../runtime.js';
import { isTerminal, RUN_VIEW, type RunView } from './view.js';

/**
 * The run views, newest id first, `page` rows per indexed read, until `max` rows were read or none
 * are left: what the dashboard's overview and the doctor's stuck-run check scan. A read always asks
 * for a whole `page` (the last one may pass `max`), so its cost is known up front.
 *
 * @example for await (const views of newestRuns(store, { max: 2_000, page: 2_000 })) count += views.length;
 */
export async function* newestRuns(store: Store, q: { max: number; page: number }): AsyncGenerator<RunView[]> {
  let before: string | undefined;
  for (let seen = 0; seen < q.max; ) {
    const rows = await store.projectionList({
      name: RUN_VIEW,
      limit: q.page,
      backwards: true,
      ...(before ? { before } : {}),
    });
    yield rows.map((row) => row.value as RunView);
    seen += rows.length;
    if (rows.length < q.page) return;
    before = rows.at(-1)!.key;
  }
}

/**
 * Runs whose view says running or sleeping, with no ready or running pass, unchanged for a minute,
 * and not waiting on a child or an event: among the newest `maxRuns`, no task will ever run them.
 */
export async function stuckRuns(store: Store, journal: Journal, maxRuns: number): Promise<string[]> {
  const now = await store.now();
  const live: RunView[] = [];
  for await (const views of newestRuns(store, { max: maxRuns, page: 500 })) {
    for (const view of views)
      if ((view.status === 'running' || view.status === 'sleeping') && now - view.updatedAt > 60_000) live.push(view);
  }
  if (live.length === 0) return [];
  const active = new Set(await store.taskListActiveKeys({ queue: RUN_QUEUE, orderingKeys: live.map((v) => v.id) }));
  const stuck: string[] = [];
  for (const view of live.filter((v) => !active.has(v.id))) {
    const [last] = await journal.readStream(runStream(view.id), { backwards: true, limit: 1 });
    if (last && !isTerminal(view.status) && last.type !== RUN_EVENT.childStarted && last.type !== RUN_EVENT.waitStarted)
      stuck.push(view.id);
  }
  return stuck;
}
