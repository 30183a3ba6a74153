import { ConflictError } from '../errors.js';
import { iso } from '../iso.js';
import type { Journal } from '../journal/journal.js';
import { WrittenViews } from '../journal/kept.js';
import { currentStatus } from '../runtime/read/view.js';
import type { Store, StoredEvent } from '../storage/store.js';
import {
  allowedAfter,
  isEnded,
  isSessionEventType,
  SESSION_EVENT_TYPES,
  statusAfter,
  type SessionEventType,
  type SessionStatus,
} from './lifecycle.js';
import { RUN_EVENT } from '../runtime/events.js';

/** The projection that holds each session's summary, keyed by session id. */
export const SESSION_VIEW = 'session';

/** The stream of one session's lifecycle events. */
export function sessionStream(id: string): string {
  return `session:${id}`;
}

/** A session as the projection stores it (times in ms, database clock). */
export interface SessionView {
  session_id: string;
  agent: string;
  status: SessionStatus;
  input: unknown;
  created_at: number;
  updated_at: number;
  /** The error of the event that failed the session; null otherwise. */
  error_message: string | null;
  /** Lifecycle events so far (the stream holds nothing else: its version). */
  events_count: number;
  last_event: SessionEventType;
}

/** A session as the API shows it. */
export interface SessionRecord extends Omit<SessionView, 'created_at' | 'updated_at'> {
  created_at: string;
  updated_at: string;
}

/** One lifecycle event as the API shows it. */
export interface SessionEvent {
  type: SessionEventType;
  timestamp: string;
  error_message?: string;
}

const registered = new WeakSet<Journal>();

/**
 * Keeps the `session` projection in step with the session streams, in the transaction of each
 * append. An event the lifecycle does not allow after the session's last one (anything after its
 * end, say) is refused with a ConflictError, which rolls its append back: a session ends once.
 */
export function projectSessions(journal: Journal): void {
  if (registered.has(journal)) return;
  registered.add(journal);
  // kept as of their events_count: the stream holds only lifecycle events
  const views = new WrittenViews<SessionView>();
  // per append, each session's events in order and its view written once: a code agent's turn opens with four
  // lifecycle events in one append (ledger-turn.ts), one view write instead of four
  journal.projectBatch([...SESSION_EVENT_TYPES], async (events, tx) => {
    const bySession = new Map<string, StoredEvent[]>();
    for (const event of events) {
      if (!event.streamId.startsWith('session:') || !isSessionEventType(event.type)) continue;
      const id = event.streamId.slice('session:'.length);
      const mine = bySession.get(id);
      if (mine) mine.push(event);
      else bySession.set(id, [event]);
    }
    for (const [id, mine] of bySession) {
      const first = mine[0]!;
      // Appends to one stream are serialized by its row lock, taken before this read: the view read
      // here is the one every earlier event of the stream committed (or the one kept of it). The
      // first event has none (retention deletes a session's view with its stream): one read fewer per session
      let view =
        first.version === 1 ? undefined : (views.take(tx, id, first.version - 1) ?? (await readSession(tx, id)));
      for (const event of mine) view = nextView(id, view, event);
      await tx.projectionPut({ name: SESSION_VIEW, key: id, value: view! });
      views.wrote(tx, id, view!.events_count, view!);
    }
  });
  projectRunEnds(journal);
}

/**
 * A session whose run failed or was cancelled before the session ended (its code threw past the
 * lifecycle, an operator cancelled it) ends with SESSION_FAILED, in the transaction that ends
 * the run: a session is never left running by a run that will not write again.
 */
function projectRunEnds(journal: Journal): void {
  // A code agent's run that succeeded ends its session here, in the transaction of its end: no step of its own
  // (session.ts). The key is the one that step used, so a run that wrote it in a step (code before this, or a run
  // replayed after a crash inside that step) writes nothing more; only the session's own run writes its lifecycle,
  // so after its background task started nothing but this can end it.
  journal.project(RUN_EVENT.runCompleted, async (event, tx) => {
    const output = (event.data as { output?: { session_id?: unknown; ended_with?: unknown } } | null)?.output;
    const id = event.streamId.slice('run:'.length);
    if (output?.session_id !== id || output.ended_with !== 'AGENT_BACKGROUND_TASK_COMPLETED') return;
    await journal.append(sessionStream(id), [{ type: 'AGENT_BACKGROUND_TASK_COMPLETED', data: {} }], {
      tx,
      idempotencyKey: `session:${id}:finished`,
    });
  });
  journal.project([RUN_EVENT.runFailed, RUN_EVENT.runCancelled], async (event, tx) => {
    const id = event.streamId.slice('run:'.length);
    const view = await readSession(tx, id);
    if (!view || isEnded(view.status)) return;
    const error = (event.data as { error?: unknown } | null)?.error;
    const error_message = typeof error === 'string' ? error : `CancelledError: the run of session ${id} was cancelled`;
    await journal.append(sessionStream(id), [{ type: 'SESSION_FAILED', data: { error_message } }], {
      tx,
      idempotencyKey: `session:${id}:failed`,
    });
  });
}

/**
 * The view after `event`. An event the lifecycle does not allow after the last one is a ConflictError.
 */
function nextView(id: string, view: SessionView | undefined, event: StoredEvent): SessionView {
  const type = event.type as SessionEventType;
  const data = (event.data ?? {}) as { agent?: string; input?: unknown; error_message?: string };
  const last = view?.last_event ?? null;
  if (!allowedAfter(last, type)) {
    const state = view ? `its last event is ${last} (${view.status})` : 'it has no events';
    throw new ConflictError(`session ${id}: ${type} cannot be recorded: ${state}`);
  }
  const next: SessionView = view ?? {
    session_id: id,
    agent: data.agent ?? '',
    status: 'pending',
    input: data.input ?? null,
    created_at: event.timestamp,
    updated_at: event.timestamp,
    error_message: null,
    events_count: 0,
    last_event: type,
  };
  next.status = statusAfter(type);
  next.last_event = type;
  next.updated_at = event.timestamp;
  next.events_count = event.version;
  if (typeof data.error_message === 'string') next.error_message = data.error_message;
  return next;
}

export async function readSession(store: Store, id: string): Promise<SessionView | undefined> {
  const view = (await store.projectionGet({ name: SESSION_VIEW, key: id })) as SessionView | undefined;
  // a view stored before 0.2 says INITIATED | BUSY | COMPLETED | FAILED
  if (view) view.status = currentStatus(view.status) as SessionStatus;
  return view;
}

export function toRecord(view: SessionView): SessionRecord {
  return { ...view, created_at: iso(view.created_at), updated_at: iso(view.updated_at) };
}

export function toSessionEvent(event: StoredEvent): SessionEvent {
  const error = (event.data as { error_message?: unknown } | null)?.error_message;
  return {
    type: event.type as SessionEventType,
    timestamp: iso(event.timestamp),
    ...(typeof error === 'string' ? { error_message: error } : {}),
  };
}
