import type { Engine } from '../engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import type { RunView } from '../runtime/read/view.js';
import type { Store } from '../storage/store.js';

const REASONS = 'execution-cancel-reason';
const RUN_PREFIX = 'run:';

/**
 * Keeps the reason of each run's cancel request (`run.cancel_requested`, written by
 * `engine.cancel(id, { reason })`) readable by run id in one lookup, so an execution's record shows
 * it without reading the run's whole journal. The first request's reason stands: a second cancel
 * of a run already cancelling changes nothing. Retention deletes the row with its run.
 *
 * @example const reason = await cancelReasons(engine, store).get('ex_01J…'); // 'customer withdrew the order'
 */
export function cancelReasons(engine: Engine, store: Store): { get(runId: string): Promise<string | null> } {
  engine.journal.project(RUN_EVENT.runCancelRequested, async (event, tx) => {
    if (!event.streamId.startsWith(RUN_PREFIX)) return;
    const key = event.streamId.slice(RUN_PREFIX.length);
    if ((await tx.projectionGet({ name: REASONS, key })) !== undefined) return;
    const reason = (event.data as { reason?: unknown }).reason;
    await tx.projectionPut({ name: REASONS, key, value: typeof reason === 'string' ? reason : null });
  });
  engine.retention.onRunPruned(async (tx: Store, run: RunView) => {
    await tx.projectionDelete({ name: REASONS, key: run.id });
  });
  return {
    get: async (runId) =>
      ((await store.projectionGet({ name: REASONS, key: runId })) as string | null | undefined) ?? null,
  };
}
