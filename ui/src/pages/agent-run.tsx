import { ApiError, apiOptional, offered } from '../api';
import { duration, ErrorBox, isTerminal, Json, Link, Page, RunLink, Status, time, useLoad } from '../common';
import { Decide, useAgentFeed, type AgentRun, type ToolCall } from './agents';
import { CompareLink } from './run-diff';

interface LedgerRun extends AgentRun {
  events: Array<{
    id: string;
    source: string;
    input_type: string;
    payload: unknown;
    status: string;
    attempt_count: number;
    last_error: string | null;
    decision: string;
    created_at: string;
  }>;
  steps: Array<{
    id: string;
    node: string;
    seq: number;
    attempt: number;
    status: string;
    input_snapshot: unknown;
    output_snapshot: unknown;
    error: string | null;
    latency_ms: number | null;
    created_at: string;
  }>;
  tool_calls: ToolCall[];
  checkpoints: Array<{ id: string; node: string; seq: number; state: unknown; created_at: string }>;
}

interface Session {
  session_id: string;
  agent: string;
  status: string;
  input: unknown;
  error_message: string | null;
  created_at: string;
}

async function load(id: string, signal: AbortSignal) {
  const paths = await offered();
  const at = encodeURIComponent(id);
  const [run, session, lifecycle] = await Promise.all([
    paths.has('GET /agent/runs/{id}') ? apiOptional<LedgerRun>(`/agent/runs/${at}`, signal) : null,
    apiOptional<Session>(`/sessions/${at}`, signal),
    apiOptional<{ events: Array<{ type: string; timestamp: string; error_message?: string }> }>(
      `/sessions/${at}/events`,
      signal,
    ),
  ]);
  if (!run && !session) throw new ApiError(404, 'not_found', `no agent run or session ${id}`);
  return { run, session, lifecycle: lifecycle?.events ?? [] };
}

/**
 * One agent run: from the ledger its inbound events, nodes (steps, each attempt), tool calls with
 * their risk and approval (decided here while pending) and checkpoints; from the session, its
 * lifecycle. A session the ledger has no run for shows its lifecycle only. Live while it runs.
 */
export function AgentRunPage({ id }: { id: string }) {
  const { data, error, reload } = useLoad((signal) => load(id, signal), [id]);
  useAgentFeed(reload, [id]);
  if (!data)
    return (
      <Page title={`Agent run ${id}`} tab={id}>
        <ErrorBox error={error} />
        {!error ? <p aria-busy="true">Loading…</p> : null}
      </Page>
    );
  const { run, session, lifecycle } = data;
  const status = run?.status ?? session!.status;
  return (
    <Page
      title={
        <>
          {run ? 'Agent run' : 'Session'} <span class="mono">{id}</span>
        </>
      }
      tab={id}
    >
      <ErrorBox error={error} />
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <Status status={status} /> {!isTerminal(status) ? <span class="live on">live</span> : null}
          </dd>
        </div>
        <div>
          <dt>Agent</dt>
          <dd>{run?.agent ?? session?.agent}</dd>
        </div>
        {run?.conversation_id ? (
          <div>
            <dt>Conversation</dt>
            <dd class="mono">{run.conversation_id}</dd>
          </div>
        ) : null}
        {run?.user_id ? (
          <div>
            <dt>User</dt>
            <dd class="mono">{run.user_id}</dd>
          </div>
        ) : null}
        {run ? (
          <div>
            <dt>Input</dt>
            <dd>
              {run.input_class} · graph {run.graph_version}
            </dd>
          </div>
        ) : null}
        <div>
          <dt>Created</dt>
          <dd>{time(run?.created_at ?? session?.created_at)}</dd>
        </div>
        {run?.started_at ? (
          <div>
            <dt>Ran for</dt>
            <dd>{duration((run.ended_at ? Date.parse(run.ended_at) : Date.now()) - Date.parse(run.started_at))}</dd>
          </div>
        ) : null}
        <div>
          <dt>Journal and timeline</dt>
          <dd>
            <RunLink id={id} />
          </dd>
        </div>
        {run?.retry_of ? (
          <div>
            <dt>Redrive of</dt>
            <dd data-fact="redrive-of">
              <Link to={`/agents/${encodeURIComponent(run.retry_of)}`}>{run.retry_of}</Link> ·{' '}
              <CompareLink original={run.retry_of} run={id} />
            </dd>
          </div>
        ) : null}
      </dl>
      {run?.failure_reason || session?.error_message ? (
        <div class="error" role="alert">
          <strong>Failed:</strong> {run?.failure_reason ?? session?.error_message}
        </div>
      ) : null}
      {session ? <Json value={session.input} label="input" /> : null}
      {run ? (
        <Ledger run={run} onDone={reload} />
      ) : (
        <p class="muted">
          The agent ledger has no run for this session (it started before the ledger, or this server has none): its
          lifecycle follows.
        </p>
      )}
      <h2>Lifecycle</h2>
      <ol class="journal lifecycle">
        {lifecycle.map((e, i) => (
          <li key={i} data-type={e.type}>
            <span class="mono evtype">{e.type}</span> <span class="muted">{time(e.timestamp)}</span>{' '}
            {e.error_message ? <span class="err">{e.error_message}</span> : null}
          </li>
        ))}
        {lifecycle.length === 0 ? <li class="muted">No lifecycle events.</li> : null}
      </ol>
    </Page>
  );
}

function Ledger({ run, onDone }: { run: LedgerRun; onDone: () => void }) {
  return (
    <>
      {run.events.length ? (
        <>
          <h2>Inbound events</h2>
          <table class="agent-events">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Source</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Payload</th>
              </tr>
            </thead>
            <tbody>
              {run.events.map((e) => (
                <tr key={e.id}>
                  <td class="mono">
                    {e.id}
                    <div class="muted">{e.decision}</div>
                  </td>
                  <td>
                    {e.source}
                    <div class="muted">{e.input_type}</div>
                  </td>
                  <td>
                    <Status status={e.status} as="ledger" />
                    {e.last_error ? <div class="err">{e.last_error}</div> : null}
                  </td>
                  <td>{e.attempt_count}</td>
                  <td>
                    <Json value={e.payload} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <h2>Steps</h2>
      <table class="agent-steps">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Attempt</th>
            <th scope="col">Status</th>
            <th scope="col">Latency</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {run.steps.map((s) => (
            <tr key={s.id} data-node={s.node} data-status={s.status}>
              <th scope="row" class="mono">
                {s.node} <span class="muted">#{s.seq}</span>
              </th>
              <td>{s.attempt}</td>
              <td>
                <Status status={s.status} as="ledger" />
              </td>
              <td>{duration(s.latency_ms)}</td>
              <td>
                {s.error ? (
                  <div class="step-error" role="note">
                    {s.error}
                  </div>
                ) : null}
                <Json value={s.input_snapshot} label="input" />
                <Json value={s.output_snapshot} label="output" />
              </td>
            </tr>
          ))}
          {run.steps.length === 0 ? (
            <tr>
              <td colSpan={5} class="empty">
                No steps yet.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <h2>Tool calls</h2>
      <table class="tool-calls">
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Risk</th>
            <th scope="col">Status</th>
            <th scope="col">Approval</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {run.tool_calls.map((t) => (
            <tr key={t.id} data-tool-call={t.id} data-tool={t.tool_name} data-status={t.status}>
              <th scope="row">
                <span class="mono">{t.tool_name}</span>
                {t.node ? <div class="muted">in {t.node}</div> : null}
              </th>
              <td>
                <span class={`risk risk-${t.risk_level}`}>{t.risk_level}</span>
              </td>
              <td>
                <Status status={t.status} as="ledger" />
                {t.attempts > 1 ? <div class="muted">{t.attempts} attempts</div> : null}
              </td>
              <td data-approval={t.approval_status ?? 'none'}>
                {t.approval_status ? (
                  <Status status={t.approval_status} as="ledger" />
                ) : (
                  <span class="muted">not needed</span>
                )}
                {t.approval_by ? (
                  <div class="muted">
                    by {t.approval_by}
                    {t.approval_reason ? `: ${t.approval_reason}` : ''}
                  </div>
                ) : null}
                {t.approval_status === 'pending' ? <Decide call={t} onDone={onDone} /> : null}
              </td>
              <td>
                {t.error ? (
                  <div class="step-error" role="note">
                    {t.error}
                  </div>
                ) : null}
                <Json value={t.input} label="input" />
                <Json value={t.output} label="output" />
              </td>
            </tr>
          ))}
          {run.tool_calls.length === 0 ? (
            <tr>
              <td colSpan={5} class="empty">
                No tool calls.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <h2>Checkpoints</h2>
      <ol class="journal checkpoints">
        {run.checkpoints.map((c) => (
          <li key={c.id} data-node={c.node}>
            <span class="mono evtype">{c.node}</span>{' '}
            <span class="muted">
              #{c.seq} · {time(c.created_at)}
            </span>
            <Json value={c.state} label="state" />
          </li>
        ))}
        {run.checkpoints.length === 0 ? <li class="muted">No node has completed yet.</li> : null}
      </ol>
      <p class="muted">
        <Link to="/agents">All agent runs</Link>
      </p>
    </>
  );
}
