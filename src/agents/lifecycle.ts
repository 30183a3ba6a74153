/**
 * The session lifecycle, drawn once. A session's stream `session:<id>` holds only these events,
 * each written at most once, in an order this table allows:
 *
 * ```
 * SESSION_INITIATED ─▶ AGENT_INVOCATION_STARTED ─┬▶ AGENT_INVOCATION_FAILED                      (FAILED)
 *                                                └▶ AGENT_INVOCATION_SUCCEEDED ─▶ AGENT_ENTRYPOINT_STARTED
 *   AGENT_ENTRYPOINT_STARTED ─┬▶ AGENT_ENTRYPOINT_FAILED                                          (FAILED)
 *                             ├▶ SESSION_TIMED_OUT        (the entrypoint ran past the maximum wait) (FAILED)
 *                             └▶ AGENT_BACKGROUND_TASK_STARTED ─┬▶ AGENT_BACKGROUND_TASK_COMPLETED (COMPLETED)
 *                                                               ├▶ AGENT_BACKGROUND_TASK_FAILED    (FAILED)
 *                                                               └▶ SESSION_TIMED_OUT               (FAILED)
 * any event before the end ─▶ SESSION_FAILED   (the session's run itself failed or was cancelled)   (FAILED)
 * ```
 *
 * Status: INITIATED after SESSION_INITIATED, BUSY until an ending event, then COMPLETED or FAILED.
 */
export const SESSION_EVENT_TYPES = [
  'SESSION_INITIATED',
  'AGENT_INVOCATION_STARTED',
  'AGENT_INVOCATION_SUCCEEDED',
  'AGENT_INVOCATION_FAILED',
  'AGENT_ENTRYPOINT_STARTED',
  'AGENT_ENTRYPOINT_FAILED',
  'AGENT_BACKGROUND_TASK_STARTED',
  'AGENT_BACKGROUND_TASK_COMPLETED',
  'AGENT_BACKGROUND_TASK_FAILED',
  'SESSION_TIMED_OUT',
  'SESSION_FAILED',
] as const;

export type SessionEventType = (typeof SESSION_EVENT_TYPES)[number];

export type SessionStatus = 'INITIATED' | 'BUSY' | 'COMPLETED' | 'FAILED';

const BEFORE_THE_END: SessionEventType[] = [
  'SESSION_INITIATED',
  'AGENT_INVOCATION_STARTED',
  'AGENT_INVOCATION_SUCCEEDED',
  'AGENT_ENTRYPOINT_STARTED',
  'AGENT_BACKGROUND_TASK_STARTED',
];

/** Each event type: the status it leaves the session in, and the events it may directly follow (null: the first). */
const LIFECYCLE: Record<SessionEventType, { status: SessionStatus; after: Array<SessionEventType | null> }> = {
  SESSION_INITIATED: { status: 'INITIATED', after: [null] },
  AGENT_INVOCATION_STARTED: { status: 'BUSY', after: ['SESSION_INITIATED'] },
  AGENT_INVOCATION_SUCCEEDED: { status: 'BUSY', after: ['AGENT_INVOCATION_STARTED'] },
  AGENT_INVOCATION_FAILED: { status: 'FAILED', after: ['AGENT_INVOCATION_STARTED'] },
  AGENT_ENTRYPOINT_STARTED: { status: 'BUSY', after: ['AGENT_INVOCATION_SUCCEEDED'] },
  AGENT_ENTRYPOINT_FAILED: { status: 'FAILED', after: ['AGENT_ENTRYPOINT_STARTED'] },
  AGENT_BACKGROUND_TASK_STARTED: { status: 'BUSY', after: ['AGENT_ENTRYPOINT_STARTED'] },
  AGENT_BACKGROUND_TASK_COMPLETED: { status: 'COMPLETED', after: ['AGENT_BACKGROUND_TASK_STARTED'] },
  AGENT_BACKGROUND_TASK_FAILED: { status: 'FAILED', after: ['AGENT_BACKGROUND_TASK_STARTED'] },
  SESSION_TIMED_OUT: { status: 'FAILED', after: ['AGENT_ENTRYPOINT_STARTED', 'AGENT_BACKGROUND_TASK_STARTED'] },
  SESSION_FAILED: { status: 'FAILED', after: BEFORE_THE_END },
};

export function isSessionEventType(type: unknown): type is SessionEventType {
  return typeof type === 'string' && Object.hasOwn(LIFECYCLE, type);
}

/** May `type` be appended to a session whose last event is `last` (null: an empty stream)? */
export function allowedAfter(last: SessionEventType | null, type: SessionEventType): boolean {
  return LIFECYCLE[type].after.includes(last);
}

/** The session's status once `type` is its last event. */
export function statusAfter(type: SessionEventType): SessionStatus {
  return LIFECYCLE[type].status;
}

export function isEnded(status: SessionStatus): boolean {
  return status === 'COMPLETED' || status === 'FAILED';
}
