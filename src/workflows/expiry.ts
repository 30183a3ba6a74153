import { isTerminal, RUN_VIEW, type RunView } from '../runtime/read/view.js';
import type { Store } from '../storage/store.js';
import type { StoredWorkflow } from './definitions.js';
import { INDEX, WORKFLOW_VIEW } from './executions.js';
import { STORED_WORKFLOW, type ExecutionInput } from './interpreter.js';
import { ttlMs } from './ttl.js';

const PAGE = 500;

/** Retention's `RunAges` (retention/ is a floor above: it takes this by its shape, as its hooks). */
export interface ExecutionAges {
  /** The execution's own age in ms, or undefined: the policy's. */
  ageOf(tx: Store, run: RunView): Promise<number | undefined>;
  /** Ids of executions that may have ended more than their own age before `now`. */
  expired(tx: Store, now: number): Promise<string[]>;
}

/**
 * A stored workflow's `ttl` as its executions' own age for retention's `runs` sweep. The workflow's
 * current version decides (shortening a ttl applies to executions already finished); a deleted
 * workflow's executions fall back to the policy's age.
 *
 * @example engine.retention.withRunAges(executionAges());
 */
export function executionAges(): ExecutionAges {
  return {
    async ageOf(tx, run) {
      if (run.workflow !== STORED_WORKFLOW) return undefined;
      const wf = (await tx.projectionGet({ name: WORKFLOW_VIEW, key: (run.input as ExecutionInput).workflow_id })) as
        | StoredWorkflow
        | undefined;
      return wf?.ttl === undefined ? undefined : ttlMs(wf.ttl);
    },
    async expired(tx, now) {
      const ids: string[] = [];
      for (let after: string | undefined; ; ) {
        const rows = await tx.projectionList({ name: WORKFLOW_VIEW, limit: PAGE, ...(after ? { after } : {}) });
        for (const row of rows) {
          const wf = row.value as StoredWorkflow;
          if (wf.ttl !== undefined) ids.push(...(await expiredOf(tx, wf.id, now - ttlMs(wf.ttl))));
        }
        if (rows.length < PAGE) return ids;
        after = rows.at(-1)!.key;
      }
    },
  };
}

/** A workflow's executions that ended before `before`, oldest first; the scan stops at the first one created after it (none later can have ended before it). */
async function expiredOf(tx: Store, workflowId: string, before: number): Promise<string[]> {
  const ids: string[] = [];
  for (let after: string | undefined; ; ) {
    const rows = await tx.projectionList({
      name: INDEX,
      prefix: `${workflowId}:`,
      limit: PAGE,
      ...(after ? { after } : {}),
    });
    for (const row of rows) {
      const id = (row.value as { execution_id: string }).execution_id;
      const view = (await tx.projectionGet({ name: RUN_VIEW, key: id })) as RunView | undefined;
      if (!view) continue;
      if (view.createdAt >= before) return ids;
      if (isTerminal(view.status) && view.updatedAt < before) ids.push(id);
    }
    if (rows.length < PAGE) return ids;
    after = rows.at(-1)!.key;
  }
}
