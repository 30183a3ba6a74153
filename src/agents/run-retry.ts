import { ConflictError, ValidationError } from '../errors.js';
import type { Actor, RetryRoute } from '../runtime/operate/operator.js';
import type { Store } from '../storage/store.js';

/** Failed events are read a page at a time (the operator's bulk limit caps the runs). */
const PAGE = 500;

/**
 * The operator's retry of an agent run (`POST /operator/runs/retry`) is the redrive of its event,
 * the one code path of `POST /agent/events/{id}/redrive`: the old attempt's rows and session events
 * stay, the new run keeps the event's place in its conversation and names the old one (`retry_of`).
 * An agent run counts as failed when its ledger row does (its session's run ended `success` having
 * journaled the agent's failure, or failed or was cancelled as a run). A session that no inbound
 * event started (`POST /sessions`) has no event to redrive: it is skipped, never started again as a
 * bare run under its old session id.
 *
 * @example engine.operator.retryThrough(SESSION_WORKFLOW, agentRunRetry(store, (id, actor) => ledger.redrive(id, actor)));
 */
export function agentRunRetry(
  store: Store,
  redrive: (eventId: string, actor: Actor) => Promise<{ run_id: string }>,
): RetryRoute {
  return {
    async failed(bounds) {
      const runs = new Set<string>();
      for (let after: string | undefined; ; ) {
        const page = await store.agentEventPage({ status: 'failed', limit: PAGE, ...(after ? { after } : {}) });
        for (const e of page) runs.add(e.run_id);
        if (page.length < PAGE) break;
        after = page.at(-1)!.id;
      }
      const ids: string[] = [];
      for (const id of runs) {
        const run = await store.agentRunGet({ id });
        if (!run) continue;
        if (bounds.createdAfter !== undefined && !(run.created_at > bounds.createdAfter)) continue;
        if (bounds.createdBefore !== undefined && !(run.created_at < bounds.createdBefore)) continue;
        ids.push(id);
      }
      return ids;
    },
    async retry(id, actor) {
      const run = await store.agentRunGet({ id });
      if (!run?.event_id)
        throw new ConflictError(`run ${id} is a session no inbound event started: start a new session instead`);
      // its events, oldest first; a redriven one is handled by its new run and no longer listed here
      const events = (await store.agentEventList({ run_id: id })).filter((e) => e.status === 'failed');
      if (events.length === 0)
        throw new ConflictError(`agent run ${id} has no failed event left to redrive (it was retried already)`);
      // a run that had coalesced several events: each is redriven, in arrival order; the first new run is named
      const started: string[] = [];
      for (const e of events) {
        try {
          started.push((await redrive(e.id, actor)).run_id);
        } catch (error) {
          // its agent is not in this process (a `--database` command line without its --agents module)
          if (!(error instanceof ValidationError) || started.length > 0) throw error;
          throw new ConflictError(`agent run ${id}: ${error.message}; retry it through a server that has its agent`);
        }
      }
      return started[0]!;
    },
  };
}
