import type { RunView } from '../runtime/read/view.js';
import type { Store } from '../storage/store.js';
import { SESSION_WORKFLOW } from './session.js';
import { SESSION_VIEW, sessionStream } from './view.js';

/**
 * Retention's hook for sessions (agent runs): deletes what a session keeps beside its run, in the
 * transaction that deletes the run — its lifecycle stream, its `session` row and its rows in the
 * agent ledger's tables (the events it handled go with it). Its key streams (`agent-event:<key>`,
 * `session-key:<key>`) are the runtime's to delete, with every keyed run. The conversation's
 * stream is shared by the conversation's runs and stays.
 *
 * @example engine.retention.onRunPruned(pruneSession);
 */
export async function pruneSession(tx: Store, run: RunView): Promise<{ events: number; other: number }> {
  if (run.workflow !== SESSION_WORKFLOW) return { events: 0, other: 0 };
  const { events } = await tx.streamDelete({ streamIds: [sessionStream(run.id)] });
  await tx.projectionDelete({ name: SESSION_VIEW, key: run.id });
  const { rows } = await tx.agentRunDelete({ ids: [run.id] });
  // other: its ledger rows and its `session` row
  return { events, other: rows + 1 };
}
