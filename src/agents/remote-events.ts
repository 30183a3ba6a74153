import type { StoredEvent } from '../storage/store.js';

/**
 * What an out-of-process (HTTP) agent writes to its run, journaled in the stream
 * `agent-remote:<session>` rather than the run's own `run:<session>`: the session's workflow
 * replays its run stream by call position, so calls written from outside would collide with its
 * own. The node and tool events mirror the run's (`agent.remote.node.started` is
 * `node.started`), and the ledger projection reads both alike (`asRunEvent`).
 */
export const REMOTE_PREFIX = 'agent-remote:';
const MIRROR = 'agent.remote.';

export const REMOTE_EVENT = {
  /** An invocation's lease token: the newest one is the only one that may write. */
  invoked: 'agent.remote.invoked',
  nodeStarted: 'agent.remote.node.started',
  nodeCompleted: 'agent.remote.node.completed',
  nodeFailed: 'agent.remote.node.failed',
  stepStarted: 'agent.remote.step.started',
  stepCompleted: 'agent.remote.step.completed',
  stepFailed: 'agent.remote.step.failed',
  /**
   * A person's decision on a remote tool call (the run's `signal.sent` for in-process agents: it would wake the
   * session's run).
   */
  signalSent: 'agent.remote.signal.sent',
  /** An approval that ran out (the run's `wait.timed_out`). */
  waitTimedOut: 'agent.remote.wait.timed_out',
  checkpoint: 'agent.remote.checkpoint',
  progress: 'agent.remote.progress',
  lifecycle: 'agent.remote.lifecycle',
} as const;

export function remoteStream(sessionId: string): string {
  return `${REMOTE_PREFIX}${sessionId}`;
}

/** A mirrored remote event as the run event it mirrors, in the run's stream, for the ledger projection. */
export function asRunEvent(event: StoredEvent): StoredEvent {
  return {
    ...event,
    type: event.type.slice(MIRROR.length),
    streamId: `run:${event.streamId.slice(REMOTE_PREFIX.length)}`,
  };
}
