import type { StoredEvent } from '../storage/store.js';
import type { ToolCallInput } from './ledger-context.js';
import { REMOTE_EVENT } from './remote-events.js';

/** What an HTTP agent's writes so far say, read from its session's `agent-remote:` stream. */
export interface RemoteState {
  token: string | null;
  /** The highest call position written. */
  seq: number;
  nodes: Map<number, { seq: number; name: string; attempt: number; at: number; ended: 'ok' | 'error' | null }>;
  /** Calls per `<node>:<tool>`: the n of a call's key. */
  tools: Map<string, number>;
  seen: Set<string>;
}

/**
 * The state of a session's remote writes: the newest lease token, the highest position, the nodes
 * and the count of tool calls per node and tool.
 *
 * @example remoteState(await journal.readStream(remoteStream('ses_1'))).token // 'lt_…'
 */
export function remoteState(events: StoredEvent[]): RemoteState {
  const s: RemoteState = { token: null, seq: 0, nodes: new Map(), tools: new Map(), seen: new Set() };
  for (const e of events) {
    const d = e.data as { token?: string; seq?: number; name?: string; attempt?: number; input?: ToolCallInput };
    if (e.type === REMOTE_EVENT.invoked) s.token = d.token!;
    if (typeof d.seq === 'number') s.seq = Math.max(s.seq, d.seq);
    if (e.type === REMOTE_EVENT.nodeStarted)
      s.nodes.set(d.seq!, { seq: d.seq!, name: d.name!, attempt: d.attempt!, at: e.timestamp, ended: null });
    if (e.type === REMOTE_EVENT.nodeCompleted || e.type === REMOTE_EVENT.nodeFailed)
      s.nodes.get(d.seq!)!.ended = e.type === REMOTE_EVENT.nodeCompleted ? 'ok' : 'error';
    if (e.type === REMOTE_EVENT.stepStarted && d.input?.ledger === 'tool') count(s, d.input);
  }
  return s;
}

/** An approved call is started again by its result: it counts once. */
function count(s: RemoteState, call: ToolCallInput): void {
  if (s.seen.has(call.key)) return;
  s.seen.add(call.key);
  const k = `${call.node ?? '-'}:${call.tool}`;
  s.tools.set(k, (s.tools.get(k) ?? 0) + 1);
}
