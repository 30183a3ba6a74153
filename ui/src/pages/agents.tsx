import { useState } from 'preact/hooks';
import { api, apiOptional } from '../api';
import { ErrorBox, Json, Link, Page, RunLink, Status, time, useLoad } from '../common';

/**
 * Agent runs with their steps and tool calls, and the approvals queue, from the agent ledger
 * (`/agent/runs`, `/agent/approvals`) where the server has it; otherwise the sessions (runs of
 * kind `session`) and their lifecycle events.
 */
export function AgentsPage({ id }: { id?: string | undefined }) {
  const { data, error, reload } = useLoad(async (signal) => {
    const ledger = await apiOptional<{ runs: any[]; next_cursor?: string | null }>('/agent/runs?limit=50', signal);
    if (ledger) {
      const approvals = await apiOptional<{ approvals?: any[]; tool_calls?: any[] }>('/agent/approvals?status=pending', signal);
      const detail = id ? await api(`/agent/runs/${encodeURIComponent(id)}`, { signal }) : null;
      return { mode: 'ledger' as const, runs: ledger.runs, approvals: approvals?.approvals ?? approvals?.tool_calls ?? [], detail };
    }
    const sessions = await api<{ runs: any[] }>('/runs?kind=session&order=created&limit=50', { signal });
    const detail = id
      ? await Promise.all([api(`/sessions/${encodeURIComponent(id)}`, { signal }), api<{ events: any[] }>(`/sessions/${encodeURIComponent(id)}/events`, { signal })]).then(([s, e]) => ({ ...s, events: e.events }))
      : null;
    return { mode: 'sessions' as const, runs: sessions.runs, approvals: [], detail };
  }, [id]);

  return (
    <Page title="Agents">
      <ErrorBox error={error} />
      {data?.mode === 'ledger' ? <Approvals items={data.approvals} onDone={reload} /> : null}
      {data?.detail ? (data.mode === 'ledger' ? <AgentRun run={data.detail} /> : <Session session={data.detail} />) : null}
      <h2>{data?.mode === 'ledger' ? 'Agent runs' : 'Sessions'}</h2>
      <table>
        <thead><tr><th scope="col">Run</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Started</th></tr></thead>
        <tbody>
          {(data?.runs ?? []).map((r: any) => (
            <tr key={r.id}>
              <td><Link to={`/agents/${encodeURIComponent(r.id)}`} class="mono">{r.id}</Link></td>
              <td>{r.agent ?? r.workflow}</td>
              <td><Status status={r.status} /></td>
              <td>{time(r.created_at ?? r.started_at)}</td>
            </tr>
          ))}
          {data && data.runs.length === 0 ? <tr><td colSpan={4} class="empty">No agent runs yet.</td></tr> : null}
        </tbody>
      </table>
    </Page>
  );
}

function Session({ session }: { session: any }) {
  return (
    <section aria-labelledby="session-title" class="card">
      <h2 id="session-title">Session <span class="mono">{session.session_id}</span></h2>
      <p>Agent <strong>{session.agent}</strong> · <Status status={session.status} /> · run <RunLink id={session.session_id} /></p>
      {session.error_message ? <p class="error">{session.error_message}</p> : null}
      <Json value={session.input} label="input" />
      <h3>Lifecycle</h3>
      <ol class="journal">
        {(session.events ?? []).map((e: any, i: number) => <li key={i}><span class="mono">{e.type}</span> <span class="muted">{time(e.timestamp)}</span> {e.error_message ? <span class="err">{e.error_message}</span> : null}</li>)}
      </ol>
    </section>
  );
}

function AgentRun({ run }: { run: any }) {
  return (
    <section aria-labelledby="agent-run-title" class="card">
      <h2 id="agent-run-title">Agent run <span class="mono">{run.id}</span></h2>
      <p>{run.agent} · <Status status={run.status} /> · conversation <span class="mono">{run.conversation_id}</span></p>
      <h3>Steps</h3>
      <ol class="journal">
        {(run.steps ?? []).map((s: any, i: number) => <li key={s.id ?? i}><span class="mono">{s.name ?? s.type ?? s.id}</span> <span class="muted">{s.status}</span><Json value={s} /></li>)}
      </ol>
      <h3>Tool calls</h3>
      <table>
        <thead><tr><th scope="col">Tool</th><th scope="col">Risk</th><th scope="col">Status</th><th scope="col">Details</th></tr></thead>
        <tbody>
          {(run.tool_calls ?? []).map((t: any, i: number) => (
            <tr key={t.id ?? i}><td class="mono">{t.tool ?? t.name}</td><td><span class={`risk risk-${t.risk_level}`}>{t.risk_level ?? '—'}</span></td><td>{t.status}</td><td><Json value={t} /></td></tr>
          ))}
        </tbody>
      </table>
      {run.checkpoints?.length ? <><h3>Checkpoints</h3><Json value={run.checkpoints} /></> : null}
    </section>
  );
}

function Approvals({ items, onDone }: { items: any[]; onDone: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [reason, setReason] = useState('');
  const decide = async (id: string, verdict: 'approve' | 'reject') => {
    setError(null);
    try {
      await api(`/agent/tool-calls/${encodeURIComponent(id)}/${verdict}`, { method: 'POST', body: { by: 'dashboard', ...(reason ? { reason } : {}) } });
      onDone();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <section aria-labelledby="approvals-title">
      <h2 id="approvals-title">Approvals waiting ({items.length})</h2>
      <ErrorBox error={error} />
      {items.length ? <label>Reason (optional) <input value={reason} onInput={(e) => setReason(e.currentTarget.value)} /></label> : <p class="muted">No tool call waits for a decision.</p>}
      <ul class="plain approvals">
        {items.map((t) => (
          <li key={t.id} class="card" data-tool-call={t.id}>
            <strong class="mono">{t.tool ?? t.name}</strong> <span class={`risk risk-${t.risk_level}`}>{t.risk_level}</span> {t.run_id ? <>in <Link to={`/agents/${encodeURIComponent(t.run_id)}`} class="mono">{t.run_id}</Link></> : null}
            <Json value={t.input ?? t.arguments ?? t} label="call" />
            <div class="actions">
              <button type="button" class="primary" onClick={() => decide(t.id, 'approve')}>Approve</button>
              <button type="button" class="danger" onClick={() => decide(t.id, 'reject')}>Reject</button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
