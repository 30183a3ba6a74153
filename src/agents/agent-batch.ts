import { toMs } from '../duration.js';
import type { Journal } from '../journal/journal.js';
import type { TaskQueue } from '../queue/queue.js';
import { RUN_EVENT } from '../runtime/events.js';
import { isTerminal, readRunView } from '../runtime/read/view.js';
import { BATCHES, batchDue, batched, closeBatch, type Open } from '../runtime/start/batch.js';
import type { Store } from '../storage/store.js';
import { readEvent, slotName, type AgentBatch, type FlowEvent } from './agent-flow.js';

/**
 * An agent's batches of intake events, on the runtime's batches (runtime/start/batch.ts): the batch of (agent, key) is
 * the projection `batching` of stream `batching:agent:<agent>:<key>`, its timeout a task of the batch queue, which
 * every worker process runs. The first arrival of a batch starts its run with its first pass parked; a later one joins
 * the run (its event names the run, which gathers every event naming it, in arrival order, when its turn comes). The
 * arrival that fills the batch closes it and moves the parked pass to now; the timeout closes it with fewer. All of it
 * in the intake's transaction, under the key's lock, so a crash loses no arrival and starts the batch's run once.
 */

/** What an arrival found under its batch key's lock. */
export interface Gathering {
  stream: string;
  /** ms, by the database's clock */
  now: number;
  /** The open batch whose run has not ended (a run cancelled while its batch was open takes no more events). */
  open: Open | undefined;
}

/**
 * The stream of the event's batch: its key over the event (default the conversation), per agent.
 *
 * @example batchStream('digest', { key: 'event.user_id', maxSize: 10, timeout: '1m' }, event)
 * // 'batching:agent:digest:user_id=u-1'
 */
export function batchStream(agent: string, batch: AgentBatch, event: FlowEvent): string {
  const key = batch.key ?? 'event.conversation_id';
  const value = key.startsWith('event.')
    ? `${key.slice('event.'.length)}=${readEvent(event, key, 'flow.batch.key')}`
    : key;
  return `batching:agent:${agent}:${slotName(value)}`;
}

/**
 * Locks the batch's key (the append of `batching.started` to its stream, as a workflow's batched start does, so the
 * batch's timer and the arrivals go one after another) and reads its open batch.
 *
 * @example const gathering = await meetBatch(engine.journal, tx, 'batching:agent:digest:user_id=u-1')
 */
export async function meetBatch(journal: Journal, tx: Store, stream: string): Promise<Gathering> {
  await journal.append(stream, [{ type: RUN_EVENT.batchingStarted, data: {} }], { tx });
  const now = await tx.now();
  const found = (await tx.projectionGet({ name: BATCHES, key: stream })) as Open | undefined;
  const run = found && (await readRunView(tx, found.runId));
  return { stream, now, open: run && !isTerminal(run.status) ? found : undefined };
}

/**
 * The batch after this arrival: the open one with one more event, or a new one of `newRun`.
 *
 * @example nextBatch(gathering, { maxSize: 10, timeout: '1m' }, 'ses_01J…').size // 1 for a new batch
 */
export function nextBatch(g: Gathering, batch: AgentBatch, newRun: string): Open {
  if (g.open) return { ...g.open, size: g.open.size + 1 };
  return { runId: newRun, first: g.now, due: g.now + toMs(batch.timeout), size: 1, max: batch.maxSize };
}

/** Whether the batch's run waits for more events: its first pass is parked until the batch closes. */
export function stillOpen(open: Open): boolean {
  return open.size < open.max;
}

/**
 * After the arrival's run is started (a new batch) or joined: the run says why it waits (`batch 3 of 100 — until
 * <time>`), and the batch is written with, for a new one, its timeout's task; the arrival that fills it closes it (a
 * batch full at its first event was never parked, so there is nothing to close).
 *
 * @example await keepBatch(engine, tx, gathering.stream, nextBatch(gathering, batch, runId), !gathering.open)
 */
export async function keepBatch(
  host: { journal: Journal; queue: TaskQueue },
  tx: Store,
  stream: string,
  open: Open,
  opened: boolean,
): Promise<void> {
  // the first names the batch's stream, for a signal to find whether the run's batch is still open (inOpenBatch)
  await batched(host, tx, open, opened ? { key: stream } : {});
  if (!stillOpen(open)) {
    if (!opened) await closeBatch(host, tx, stream, open.runId);
    return;
  }
  await tx.projectionPut({ name: BATCHES, key: stream, value: open });
  if (opened) await batchDue(host, tx, stream, open);
}
