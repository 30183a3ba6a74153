import type { AgentRun as AgentRunRecord, AgentToolCall } from '../../../src/client/records.js';
import { RUN_EVENT } from '../../../src/runtime/events.js';
import { useEffect, useState } from 'preact/hooks';
import { api, offered, subscribe } from '../api';
import { ErrorBox, Json, Link, Page, Status, throttle, Time, useLoad } from '../common';
import { navigate, useLocation } from '../router';

/** An agent run as `GET /agent/runs` lists it. */
export type AgentRun = AgentRunRecord;

/** A tool call as the ledger records it (`risk_level`, `approval_status` …). */
export type ToolCall = AgentToolCall;

interface SessionRun {
  id: string;
  status: string;
  created_at: string;
  error: string | null;
}

/**
 * The journal events that change what the agents pages show: a run's lifecycle (its session
 * events), its nodes, its tool steps, and approval waits and decisions. The pages reload on them.
 */
export const AGENT_LIVE_TYPES = [
  'SESSION_INITIATED',
  'AGENT_INVOCATION_STARTED',
  'AGENT_INVOCATION_FAILED',
  'AGENT_ENTRYPOINT_FAILED',
  'AGENT_BACKGROUND_TASK_COMPLETED',
  'AGENT_BACKGROUND_TASK_FAILED',
  'SESSION_TIMED_OUT',
  'SESSION_FAILED',
  RUN_EVENT.nodeStarted,
  RUN_EVENT.nodeCompleted,
  RUN_EVENT.nodeFailed,
  RUN_EVENT.stepStarted,
  RUN_EVENT.stepCompleted,
  RUN_EVENT.stepFailed,
  RUN_EVENT.waitStarted,
  RUN_EVENT.waitCompleted,
  RUN_EVENT.waitTimedOut,
  RUN_EVENT.signalSent,
].join(',');

/** Reloads (at most once a second) while the journal shows agent activity; says whether the feed is live. */
export function useAgentFeed(reload: () => void, deps: unknown[]): boolean {
  const [live, setLive] = useState(false);
  useEffect(() => {
    const controller = new AbortController();
    const refresh = throttle(reload, 1000);
    subscribe(`/events/stream?types=${AGENT_LIVE_TYPES}`, () => refresh(), {
      signal: controller.signal,
      onState: setLive,
    });
    return () => controller.abort();
  }, deps);
  return live;
}

/**
 * Sessions the ledger has no run for (started before it existed): the newest page of sessions less
 * those the ledger lists, down to the oldest run it listed (older ones may be on its next page).
 */
function withoutLedger(sessions: SessionRun[], runs: AgentRun[], full: boolean): SessionRun[] {
  const known = new Set(runs.map((r) => r.id));
  const oldest = full ? runs.at(-1)?.created_at : undefined;
  return sessions.filter((s) => !known.has(s.id) && (oldest === undefined || s.created_at >= oldest));
}

async function load(cursor: string | null, signal: AbortSignal) {
  const paths = await offered();
  const sessions = await api<{ runs: SessionRun[] }>('/runs?kind=session&order=created&limit=50', { signal });
  if (!paths.has('GET /agent/runs'))
    return { ledger: false, runs: [] as AgentRun[], next: null, approvals: [] as ToolCall[], sessions: sessions.runs };
  const [runs, approvals] = await Promise.all([
    api<{ runs: AgentRun[]; next_cursor: string | null }>(
      `/agent/runs?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { signal },
    ),
    api<{ tool_calls: ToolCall[] }>('/agent/approvals?status=pending&limit=100', { signal }),
  ]);
  const others = cursor ? [] : withoutLedger(sessions.runs, runs.runs, runs.next_cursor !== null);
  return { ledger: true, runs: runs.runs, next: runs.next_cursor, approvals: approvals.tool_calls, sessions: others };
}

/**
 * Agent runs from the agent ledger (`/agent/runs`), newest first, and the approvals queue: tool
 * calls waiting for a person, approved or rejected here. Sessions the ledger has no run for (a
 * server without the ledger, or sessions older than it) are listed with their lifecycle.
 */
export function AgentsPage() {
  const loc = useLocation();
  const cursor = loc.query.get('after');
  const { data, error, reload } = useLoad((signal) => load(cursor, signal), [cursor]);
  const live = useAgentFeed(reload, [cursor]);
  return (
    <Page
      title="Agents"
      actions={
        <span class={`live ${live ? 'on' : ''}`} role="status">
          {live ? 'live' : 'offline'}
        </span>
      }
    >
      <ErrorBox error={error} />
      {data?.ledger ? <Approvals items={data.approvals} onDone={reload} /> : null}
      {data?.ledger ? (
        <>
          <h2 id="agent-runs-title">Agent runs</h2>
          <table class="agent-runs" aria-labelledby="agent-runs-title">
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Agent</th>
                <th scope="col">Conversation</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
                <th scope="col">Failure</th>
              </tr>
            </thead>
            <tbody>
              {data.runs.map((r) => (
                <tr key={r.id} data-run={r.id} data-status={r.status}>
                  <td>
                    <Link to={`/agents/${encodeURIComponent(r.id)}`} class="mono">
                      {r.id}
                    </Link>
                  </td>
                  <td>
                    {r.agent}
                    <div class="muted">{r.input_class}</div>
                  </td>
                  <td class="mono">
                    {r.conversation_id ?? '—'}
                    {r.user_id ? <div class="muted">{r.user_id}</div> : null}
                  </td>
                  <td>
                    <Status status={r.status} />
                  </td>
                  <td>
                    <Time iso={r.created_at} />
                  </td>
                  <td class="err clip" title={r.failure_reason ?? ''}>
                    {r.failure_reason ?? ''}
                  </td>
                </tr>
              ))}
              {data.runs.length === 0 ? (
                <tr>
                  <td colSpan={6} class="empty">
                    No agent runs yet (POST /agent/events, or start a session).
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
          <nav class="pager" aria-label="Pages">
            {cursor ? (
              <button type="button" onClick={() => history.back()}>
                ← Newer
              </button>
            ) : null}
            {data.next ? (
              <button type="button" onClick={() => navigate(`/agents?after=${encodeURIComponent(data.next!)}`)}>
                Older →
              </button>
            ) : null}
          </nav>
        </>
      ) : null}
      {data && (!data.ledger || data.sessions.length > 0) ? (
        <Sessions sessions={data.sessions} ledger={data.ledger} />
      ) : null}
    </Page>
  );
}

function Sessions({ sessions, ledger }: { sessions: SessionRun[]; ledger: boolean }) {
  return (
    <>
      <h2 id="sessions-title">{ledger ? 'Sessions without ledger data' : 'Sessions'}</h2>
      <table aria-labelledby="sessions-title">
        <thead>
          <tr>
            <th scope="col">Session</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((s) => (
            <tr key={s.id} data-run={s.id}>
              <td>
                <Link to={`/agents/${encodeURIComponent(s.id)}`} class="mono">
                  {s.id}
                </Link>
              </td>
              <td>
                <Status status={s.status} />
              </td>
              <td>
                <Time iso={s.created_at} />
              </td>
              <td class="err clip" title={s.error ?? ''}>
                {s.error ?? ''}
              </td>
            </tr>
          ))}
          {sessions.length === 0 ? (
            <tr>
              <td colSpan={4} class="empty">
                No sessions yet.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </>
  );
}

/** Approve or reject a tool call waiting for a person (`by: dashboard`, with an optional reason). */
export function Decide({ call, onDone }: { call: ToolCall; onDone: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const decide = async (verdict: 'approve' | 'reject') => {
    setBusy(true);
    setError(null);
    try {
      await api(`/agent/tool-calls/${encodeURIComponent(call.id)}/${verdict}`, {
        method: 'POST',
        body: { by: 'dashboard', ...(reason.trim() ? { reason: reason.trim() } : {}) },
      });
      onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="decide">
      <label>
        Reason (optional) <input value={reason} maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={busy}
          onClick={() => decide('approve')}
          aria-label={`Approve ${call.tool_name} (${call.id})`}
        >
          Approve
        </button>
        <button
          type="button"
          class="danger"
          disabled={busy}
          onClick={() => decide('reject')}
          aria-label={`Reject ${call.tool_name} (${call.id})`}
        >
          Reject
        </button>
      </div>
      <ErrorBox error={error} />
    </div>
  );
}

function Approvals({ items, onDone }: { items: ToolCall[]; onDone: () => void }) {
  return (
    <section aria-labelledby="approvals-title" id="approvals">
      <h2 id="approvals-title">Approvals waiting ({items.length})</h2>
      {items.length === 0 ? <p class="muted">No tool call waits for a decision.</p> : null}
      <ul class="plain approvals">
        {items.map((t) => (
          <li key={t.id} class="card" data-tool-call={t.id} data-tool={t.tool_name}>
            <strong class="mono">{t.tool_name}</strong>{' '}
            <span class={`risk risk-${t.risk_level}`}>{t.risk_level} risk</span> in{' '}
            <Link to={`/agents/${encodeURIComponent(t.run_id)}`} class="mono">
              {t.run_id}
            </Link>
            {t.node ? (
              <>
                {' '}
                · node <span class="mono">{t.node}</span>
              </>
            ) : null}
            {t.approval_expires_at ? (
              <>
                {' '}
                · expires <Time iso={t.approval_expires_at} />
              </>
            ) : null}
            <Json value={t.input} label="input" open />
            <Decide call={t} onDone={onDone} />
          </li>
        ))}
      </ul>
    </section>
  );
}
