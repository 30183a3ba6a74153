import type { Journal } from '../journal/journal.js';
import { WrittenViews } from '../journal/kept.js';
import type { AgentEventRow } from '../storage/ledger.js';
import { CONVERSATION_VIEW, conversationStream, readConversation, type ConversationView } from './conversation.js';
import { agentRunTransitions, moveEvents, moveRun, sources } from './ledger-lifecycle.js';
import { projectLedgerSteps } from './ledger-steps.js';

/** What `agent.event.received` carries: the event's row, as the intake decided it. */
export type ReceivedEvent = Pick<
  AgentEventRow,
  | 'id'
  | 'conversation_id'
  | 'user_id'
  | 'source'
  | 'input_type'
  | 'payload'
  | 'idempotency_key'
  | 'agent'
  | 'run_id'
  | 'decision'
>;

const ENDINGS: Record<string, 'success' | 'failed'> = {
  AGENT_BACKGROUND_TASK_COMPLETED: 'success',
  AGENT_BACKGROUND_TASK_FAILED: 'failed',
  AGENT_INVOCATION_FAILED: 'failed',
  AGENT_ENTRYPOINT_FAILED: 'failed',
  SESSION_TIMED_OUT: 'failed',
  SESSION_FAILED: 'failed',
};

const registered = new WeakSet<Journal>();

/**
 * Keeps the agent ledger's tables in step with the journal, in the transaction of each append:
 * the intake's events, the sessions' lifecycle, and the runs' nodes, tool steps and approval waits
 * and signals. Rows move only along the edges of `ledger-lifecycle.ts`.
 */
export function projectLedger(journal: Journal): void {
  if (registered.has(journal)) return;
  registered.add(journal);

  journal.project('agent.event.received', async (event, tx) => {
    const e = event.data as ReceivedEvent;
    await tx.agentEventPut({
      event: {
        ...e,
        status: 'pending',
        attempt_count: 0,
        available_at: event.timestamp,
        last_error: null,
        created_at: event.timestamp,
        updated_at: event.timestamp,
      },
    });
  });
  journal.project('agent.event.redriven', async (event, tx) => {
    const d = event.data as { event_id: string; run_id: string; retry_of: string };
    await tx.agentEventRedrive({ id: d.event_id, run_id: d.run_id, retry_of: d.retry_of, at: event.timestamp });
  });
  const conversations = new WrittenViews<ConversationView>();
  journal.project(
    ['agent.event.queued', 'agent.event.coalesced', 'agent.event.requeued', 'agent.run.started', 'agent.run.ended'],
    async (event, tx) => {
      const conversationId = event.streamId.slice('agent-conversation:'.length);
      // a conversation's first event has no view before it: one read fewer for an event into a new conversation
      const view =
        event.version === 1
          ? { version: 0, waiting: {} }
          : (conversations.take(tx, conversationId, event.version - 1) ?? (await readConversation(tx, conversationId)));
      const { run_id, agent } = event.data as { run_id: string; agent: string };
      view.version = event.version;
      if (event.type === 'agent.event.queued') view.waiting[agent] = run_id;
      if ((event.type === 'agent.run.started' || event.type === 'agent.run.ended') && view.waiting[agent] === run_id)
        delete view.waiting[agent];
      // sent together (PostgreSQL pipelines them): one round trip, not three
      await Promise.all([
        ...(event.type === 'agent.run.started'
          ? [
              moveRun(tx, run_id, 'running', event.timestamp),
              moveEvents(tx, run_id, 'processing', event.timestamp, { attempt_count: 1 }),
            ]
          : []),
        tx.projectionPut({ name: CONVERSATION_VIEW, key: conversationId, value: view }),
      ]);
      conversations.wrote(tx, conversationId, event.version, view);
    },
  );

  journal.project('SESSION_INITIATED', async (event, tx) => {
    const id = event.streamId.slice('session:'.length);
    const d = event.data as {
      agent: string;
      graph_version?: string;
      conversation_id?: string;
      user_id?: string;
      event_id?: string;
      input_class?: string;
    };
    const run = {
      id,
      event_id: d.event_id ?? null,
      conversation_id: d.conversation_id ?? null,
      user_id: d.user_id ?? null,
      agent: d.agent,
      status: 'pending',
      graph_version: d.graph_version ?? 'v1',
      input_class: d.input_class ?? 'session',
      started_at: null,
      ended_at: null,
      failure_reason: null,
      retry_of: null,
      created_at: event.timestamp,
      updated_at: event.timestamp,
    };
    await tx.agentRunPut({ run });
  });
  journal.project('AGENT_INVOCATION_STARTED', async (event, tx) => {
    const id = event.streamId.slice('session:'.length);
    // one update: a run of inbound events is running already (its turn's agent.run.started, in this transaction)
    await tx.agentRunUpdate({
      id,
      change: { status: 'running', started_at: event.timestamp },
      at: event.timestamp,
      from: [...sources(agentRunTransitions, 'running'), 'running'],
    });
  });
  journal.project(Object.keys(ENDINGS), async (event, tx) => {
    const id = event.streamId.slice('session:'.length);
    const to = ENDINGS[event.type]!;
    const error = (event.data as { error_message?: string } | null)?.error_message ?? null;
    // together: a success is written in its run's end, in a group commit other runs' ends wait on
    await Promise.all([
      moveRun(tx, id, to, event.timestamp, { ended_at: event.timestamp, failure_reason: error }),
      moveEvents(
        tx,
        id,
        to === 'success' ? 'done' : 'failed',
        event.timestamp,
        error === null ? {} : { last_error: error },
      ),
    ]);
    // a run that ends before its turn came (cancelled) stops taking coalesced events: the append moves the
    // conversation's version, so an intake that read it as waiting retries.
    // A success came after its turn (its start took it off the waiting list): two reads fewer per run
    if (to === 'success') return;
    const run = await tx.agentRunGet({ id });
    if (run?.conversation_id && (await readConversation(tx, run.conversation_id)).waiting[run.agent] === id) {
      await journal.append(
        conversationStream(run.conversation_id),
        [{ type: 'agent.run.ended', data: { run_id: id, agent: run.agent } }],
        { tx },
      );
    }
  });

  projectLedgerSteps(journal);
}
