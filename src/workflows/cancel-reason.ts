import type { Engine } from '../engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import type { RunView } from '../runtime/read/view.js';
import type { Store } from '../storage/store.js';

const REASONS = 'execution-cancel-reason';
const RUN_PREFIX = 'run:';

/**
 * A run's cancel request as the journal has it: why, who asked (`user`: the API, the CLI, the dashboard, an
 * operator's bulk cancel; `system`: the engine enforcing a limit, such as a stored workflow's `timeout_seconds`),
 * and whether the execution's compensations should delete the artifacts it made (brief 004 §9.2).
 */
export interface Cancellation {
  reason: string | null;
  by: 'user' | 'system';
  delete_artifacts: boolean;
}

/** What `{{cancel.…}}` reads in a compensation when nobody asked to cancel (the execution failed). */
export const NOT_CANCELLED = { requested: false, reason: null, by: null, delete_artifacts: false } as const;

/**
 * Keeps each run's cancel request (`run.cancel_requested`, written by `engine.cancel(id, { reason })`, by the
 * executions' cancel with `delete_artifacts`, or by the engine at a run's deadline with `by: 'system'`) readable by
 * run id in one lookup, so an execution's record and its compensations read it without the run's whole journal.
 * The first request stands: a second cancel of a run already cancelling changes nothing. Retention deletes the
 * row with its run. Rows written before `by` was journaled hold the reason alone: a user's.
 *
 * @example
 * const cancel = await cancelReasons(engine, store).get('ex_01J…');
 * // { reason: 'customer withdrew', by: 'user', delete_artifacts: false }
 */
export function cancelReasons(engine: Engine, store: Store): { get(runId: string): Promise<Cancellation | null> } {
  engine.journal.project(RUN_EVENT.runCancelRequested, async (event, tx) => {
    if (!event.streamId.startsWith(RUN_PREFIX)) return;
    const key = event.streamId.slice(RUN_PREFIX.length);
    if ((await tx.projectionGet({ name: REASONS, key })) !== undefined) return;
    const data = event.data as { reason?: unknown; by?: unknown; delete_artifacts?: unknown };
    const value: Cancellation = {
      reason: typeof data.reason === 'string' ? data.reason : null,
      by: data.by === 'system' ? 'system' : 'user',
      delete_artifacts: data.delete_artifacts === true,
    };
    await tx.projectionPut({ name: REASONS, key, value });
  });
  engine.retention.onRunPruned(async (tx: Store, run: RunView) => {
    await tx.projectionDelete({ name: REASONS, key: run.id });
  });
  return {
    get: async (runId) => {
      const value = (await store.projectionGet({ name: REASONS, key: runId })) as
        | Cancellation
        | string
        | null
        | undefined;
      if (value === undefined) return null;
      if (value === null || typeof value === 'string') return { reason: value, by: 'user', delete_artifacts: false };
      return value;
    },
  };
}
