import type { Journal } from '../journal/journal.js';
import type { AgentEventRow } from '../storage/ledger.js';
import type { Store } from '../storage/store.js';

/**
 * The stream of one conversation's arrivals: each event's arrival-policy decision (or its redrive), and each run's
 * start. Appends to it serialize intake per conversation.
 */
export function conversationStream(conversationId: string): string {
  return `agent-conversation:${conversationId}`;
}

/** The runs' ordering key: one active run per conversation, in arrival order, across processes. */
export function conversationOrderingKey(conversationId: string): string {
  return `conversation:${conversationId}`;
}

/**
 * The projection that holds, per conversation, its stream's version and each agent's run still waiting for its turn.
 */
export const CONVERSATION_VIEW = 'agent.conversation';

export interface ConversationView {
  version: number;
  /** agent name → the run that has not started yet, which `coalesce` events join. */
  waiting: Record<string, string>;
}

export async function readConversation(store: Store, conversationId: string): Promise<ConversationView> {
  return (
    ((await store.projectionGet({ name: CONVERSATION_VIEW, key: conversationId })) as ConversationView | undefined) ?? {
      version: 0,
      waiting: {},
    }
  );
}

/**
 * The runs of the conversation's events received after `event` that have not started (those
 * events are pending): a redriven event's run waits in front of them, so the event keeps its place
 * in its conversation's arrival order (received time, then id: the order GET /agent/events lists).
 * Read after the conversation's stream is locked, so no arrival slips in meanwhile.
 */
export async function laterArrivals(tx: Store, event: AgentEventRow): Promise<string[]> {
  const runs = new Set<string>();
  const page = { conversation_id: event.conversation_id, status: 'pending' as const, limit: 500 };
  for (let after: string | undefined; ; ) {
    const rows = await tx.agentEventPage({ ...page, ...(after !== undefined ? { after } : {}) });
    for (const e of rows) {
      if (e.created_at < event.created_at || (e.created_at === event.created_at && e.id <= event.id)) return [...runs];
      runs.add(e.run_id);
    }
    if (rows.length < page.limit) return [...runs];
    after = rows.at(-1)!.id;
  }
}

/** An inbound event as a run's input shows it. */
export interface GatheredEvent {
  event_id: string;
  source: string;
  input_type: string;
  payload: unknown;
  created_at: string;
}

/**
 * A run's turn came: closes the window in which `coalesce` events can join it (the append locks the
 * conversation's stream, so no intake joins after it) and returns the events it handles, oldest
 * first. Idempotent: run again after a crash, it appends nothing and returns the same events.
 */
export async function gatherEvents(
  store: Store,
  journal: Journal,
  p: { runId: string; conversationId: string; agent: string },
): Promise<GatheredEvent[]> {
  return store.transaction(async (tx) => {
    await journal.append(
      conversationStream(p.conversationId),
      [{ type: 'agent.run.started', data: { run_id: p.runId, agent: p.agent } }],
      { tx, idempotencyKey: `agent-run-started:${p.runId}` },
    );
    const events = await tx.agentEventList({ run_id: p.runId });
    return events.map((e) => ({
      event_id: e.id,
      source: e.source,
      input_type: e.input_type,
      payload: e.payload,
      created_at: new Date(e.created_at).toISOString(),
    }));
  });
}
