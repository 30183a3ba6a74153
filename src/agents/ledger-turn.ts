import { ConflictError, TerminalError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import { gatherEvents, type GatheredEvent } from './conversation.js';
import { isEnded, type SessionEventType } from './lifecycle.js';
import { readSession, sessionStream } from './view.js';

export interface Opened {
  events: GatheredEvent[];
  /**
   * The last lifecycle event the opening wrote (its time starts the maximum wait); type null: the session had ended
   * before its turn.
   */
  last: { type: SessionEventType | null; timestamp: number };
}

/**
 * A code agent's run of inbound events, its turn come: in one transaction, the gathering of its
 * events and its lifecycle up to its background task (up to its entrypoint, when it has one). A code
 * agent's invocation cannot fail, so these events need no step each: one step instead of five, one
 * transaction instead of five (PostgreSQL: 90 → 63 statements per event of a no-op ledger agent).
 * Idempotent like the steps it replaces: run again after a crash, it writes nothing and returns
 * the same events and times. A session that ended before its turn (cancelled) refuses the
 * lifecycle: its events are gathered alone and `last.type` is null.
 */
export async function openTurn(
  o: { store: Store; journal: Journal },
  sessionId: string,
  hasEntrypoint: boolean,
  gather: { runId: string; conversationId: string; agent: string },
): Promise<Opened> {
  const types: SessionEventType[] = [
    'AGENT_INVOCATION_STARTED',
    'AGENT_INVOCATION_SUCCEEDED',
    'AGENT_ENTRYPOINT_STARTED',
  ];
  if (!hasEntrypoint) types.push('AGENT_BACKGROUND_TASK_STARTED');
  let last: Opened['last'] = { type: null, timestamp: 0 };
  try {
    // gatherEvents' transaction is this one (a store's transaction inside one joins it)
    const events = await o.store.transaction(async (tx) => {
      const gathered = await gatherEvents(tx, o.journal, gather);
      const opening = types.map((type) => ({ type, data: {} }));
      const appended = await o.journal.append(sessionStream(sessionId), opening, {
        tx,
        idempotencyKey: `session:${sessionId}:open`,
      });
      const event = appended.events.at(-1)!;
      last = { type: event.type as SessionEventType, timestamp: event.timestamp };
      return gathered;
    });
    return { events, last };
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
    const view = await readSession(o.store, sessionId);
    if (!view || !isEnded(view.status)) throw new TerminalError(error.message);
    return { events: await gatherEvents(o.store, o.journal, gather), last: { type: null, timestamp: 0 } };
  }
}
