/**
 * The session lifecycle, drawn once. A session's stream `session:<id>` holds only these events,
 * each written at most once, in an order this table allows:
 *
 * ```
 * SESSION_INITIATED ─▶ AGENT_INVOCATION_STARTED ─┬▶ AGENT_INVOCATION_FAILED                      (failed)
 *                                                └▶ AGENT_INVOCATION_SUCCEEDED ─▶ AGENT_ENTRYPOINT_STARTED
 *   AGENT_ENTRYPOINT_STARTED ─┬▶ AGENT_ENTRYPOINT_FAILED                                          (failed)
 *                             ├▶ SESSION_TIMED_OUT        (the entrypoint ran past the maximum wait) (failed)
 *                             └▶ AGENT_BACKGROUND_TASK_STARTED ─┬▶ AGENT_BACKGROUND_TASK_COMPLETED (success)
 *                                                               ├▶ AGENT_BACKGROUND_TASK_FAILED    (failed)
 *                                                               └▶ SESSION_TIMED_OUT               (failed)
 * any event before the end ─▶ SESSION_FAILED   (the session's run itself failed or was cancelled)   (failed)
 * ```
 *
 * Status: pending after SESSION_INITIATED, running until an ending event, then success or failed.
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

/**
 * A session's status, in the run vocabulary (docs/glossary.md): `pending` after SESSION_INITIATED,
 * `running` until an ending event, then `success` or `failed`. (Before 0.2 these were spelled
 * INITIATED, BUSY, COMPLETED and FAILED; views stored then are read in today's words.)
 */
export type SessionStatus = 'pending' | 'running' | 'success' | 'failed';

const BEFORE_THE_END: SessionEventType[] = [
  'SESSION_INITIATED',
  'AGENT_INVOCATION_STARTED',
  'AGENT_INVOCATION_SUCCEEDED',
  'AGENT_ENTRYPOINT_STARTED',
  'AGENT_BACKGROUND_TASK_STARTED',
];

/** Each event type: the status it leaves the session in, and the events it may directly follow (null: the first). */
const LIFECYCLE: Record<SessionEventType, { status: SessionStatus; after: Array<SessionEventType | null> }> = {
  SESSION_INITIATED: { status: 'pending', after: [null] },
  AGENT_INVOCATION_STARTED: { status: 'running', after: ['SESSION_INITIATED'] },
  AGENT_INVOCATION_SUCCEEDED: { status: 'running', after: ['AGENT_INVOCATION_STARTED'] },
  AGENT_INVOCATION_FAILED: { status: 'failed', after: ['AGENT_INVOCATION_STARTED'] },
  AGENT_ENTRYPOINT_STARTED: { status: 'running', after: ['AGENT_INVOCATION_SUCCEEDED'] },
  AGENT_ENTRYPOINT_FAILED: { status: 'failed', after: ['AGENT_ENTRYPOINT_STARTED'] },
  AGENT_BACKGROUND_TASK_STARTED: { status: 'running', after: ['AGENT_ENTRYPOINT_STARTED'] },
  AGENT_BACKGROUND_TASK_COMPLETED: { status: 'success', after: ['AGENT_BACKGROUND_TASK_STARTED'] },
  AGENT_BACKGROUND_TASK_FAILED: { status: 'failed', after: ['AGENT_BACKGROUND_TASK_STARTED'] },
  SESSION_TIMED_OUT: { status: 'failed', after: ['AGENT_ENTRYPOINT_STARTED', 'AGENT_BACKGROUND_TASK_STARTED'] },
  SESSION_FAILED: { status: 'failed', after: BEFORE_THE_END },
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
  return status === 'success' || status === 'failed';
}
