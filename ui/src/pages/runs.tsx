import type { RunSummary as ApiRunSummary } from '../../../src/client/records.js';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, subscribe } from '../api';
import {
  duration,
  ErrorBox,
  isTerminal,
  Link,
  normalStatus,
  Page,
  RUN_STATUSES,
  RunLink,
  Status,
  throttle,
  Time,
  useLoad,
} from '../common';
import { StoredWorkflow, useWorkflowNames } from '../names';
import { navigate, useLocation } from '../router';
import { Bulk, runFilter } from './bulk';

/** A run of `GET /runs`, with what the page shows when the record carries it. */
export type RunSummary = ApiRunSummary & {
  label?: string | null;
  state?: string | null;
  progress?: { done: number; total: number } | null;
};

const PAGE_SIZE = 50;
/** A filtered page can come back short: ask again from where it stopped, this many times at most. */
const FILL_REQUESTS = 20;
const LIVE_TYPES =
  'run.started,run.completed,run.failed,run.cancelled,step.started,sleep.started,wait.started,sleep.completed,wait.completed';

/** The ways to ask for a status, tried in order until the server accepts one: `success` was `succeeded` before. */
function statusParams(status: string): string[] {
  return status === 'success' ? ['success,succeeded', 'success', 'succeeded'] : [status];
}

async function loadPage(
  query: URLSearchParams,
  signal: AbortSignal,
): Promise<{ runs: RunSummary[]; last_key: string | null }> {
  const params = new URLSearchParams({ limit: String(PAGE_SIZE), order: 'created' });
  for (const key of ['kind', 'workflow']) if (query.get(key)) params.set(key, query.get(key)!);
  if (query.get('from')) params.set('created_after', new Date(query.get('from')!).toISOString());
  if (query.get('to')) params.set('created_before', new Date(query.get('to')!).toISOString());
  const statuses = query.get('status') ? statusParams(query.get('status')!) : [];
  if (statuses.length) params.set('status', statuses.shift()!);
  let lastKey = query.get('after');
  const runs: RunSummary[] = [];
  for (let i = 0; i < FILL_REQUESTS; i++) {
    if (lastKey) params.set('last_key', lastKey);
    params.set('limit', String(PAGE_SIZE - runs.length));
    let page: { runs: RunSummary[]; last_key: string | null };
    try {
      page = await api(`/runs?${params}`, { signal });
    } catch (error: any) {
      if (error?.status === 400 && statuses.length && runs.length === 0) {
        params.set('status', statuses.shift()!);
        i--;
        continue;
      }
      throw error;
    }
    runs.push(...page.runs);
    lastKey = page.last_key;
    if (runs.length >= PAGE_SIZE || !lastKey) break;
  }
  return { runs, last_key: lastKey };
}

export function RunsPage() {
  const loc = useLocation();
  const query = loc.query;
  const key = query.toString();
  const { data, error, loading, reload } = useLoad((signal) => loadPage(query, signal), [key]);
  const [live, setLive] = useState(false);
  const firstPage = !query.get('after');

  useEffect(() => {
    if (!firstPage) return;
    const controller = new AbortController();
    const refresh = throttle(reload, 1000);
    subscribe(`/events/stream?stream_prefix=run:&types=${LIVE_TYPES}`, () => refresh(), {
      signal: controller.signal,
      onState: setLive,
    });
    return () => controller.abort();
  }, [key]);

  const set = (name: string, value: string) => {
    const next = new URLSearchParams(query);
    if (value) next.set(name, value);
    else next.delete(name);
    next.delete('after');
    navigate(`/runs${next.toString() ? `?${next}` : ''}`, true);
  };

  const [idText, setIdText] = useState('');
  const rows = useMemo(() => data?.runs ?? [], [data]);
  const names = useWorkflowNames(data?.runs);

  return (
    <Page
      title="Runs"
      actions={
        <span class={`live ${live ? 'on' : ''}`} role="status">
          {live ? 'live' : 'offline'}
        </span>
      }
    >
      {/* biome-ignore lint/a11y/useSemanticElements: the <search> element is too new for the browsers the dashboard supports */}
      <form
        class="filters"
        role="search"
        aria-label="Filter runs"
        onSubmit={(e) => {
          e.preventDefault();
          if (idText.trim()) navigate(`/runs/${encodeURIComponent(idText.trim())}`);
        }}
      >
        <label>
          Status
          <select value={query.get('status') ?? ''} onChange={(e) => set('status', e.currentTarget.value)}>
            <option value="">any</option>
            {RUN_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label>
          Kind
          <select value={query.get('kind') ?? ''} onChange={(e) => set('kind', e.currentTarget.value)}>
            <option value="">any</option>
            <option value="execution">stored workflow</option>
            <option value="code">code workflow</option>
            <option value="session">agent run (session)</option>
          </select>
        </label>
        <label>
          Workflow or agent
          <input
            type="text"
            placeholder="name or wf_…"
            defaultValue={query.get('workflow') ?? ''}
            onChange={(e) => set('workflow', e.currentTarget.value.trim())}
          />
        </label>
        <label>
          From
          <input
            type="datetime-local"
            value={query.get('from') ?? ''}
            onChange={(e) => set('from', e.currentTarget.value)}
          />
        </label>
        <label>
          To
          <input
            type="datetime-local"
            value={query.get('to') ?? ''}
            onChange={(e) => set('to', e.currentTarget.value)}
          />
        </label>
        <label>
          Run id
          <input
            type="search"
            placeholder="ex_… / run_… / ses_…"
            value={idText}
            onInput={(e) => setIdText(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Open</button>
      </form>
      <Bulk {...runFilter(query)} onDone={reload} />
      <ErrorBox error={error} />
      <div class="scroll">
        <table class="runs" aria-busy={loading} aria-describedby="runs-count">
          <caption id="runs-count" class="sr-only">
            {rows.length} runs on this page, newest first
          </caption>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Kind</th>
              <th scope="col">Workflow</th>
              <th scope="col">Status</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.id} data-run={r.id} data-status={normalStatus(r.status)}>
                <td>
                  <RunLink id={r.id} />
                </td>
                <td>{r.kind ?? '—'}</td>
                <td>
                  {r.workflow_id ? (
                    <StoredWorkflow id={r.workflow_id} names={names} />
                  ) : r.kind === 'session' ? (
                    <Link to={`/agents/${encodeURIComponent(r.id)}`} class="mono">
                      {r.agent ?? 'agent run'}
                    </Link>
                  ) : (
                    <span class="mono">{r.workflow}</span>
                  )}
                  {r.label ? <div class="muted">{r.label}</div> : null}
                </td>
                <td>
                  <Status status={r.status} />
                  {r.waiting_for && !isTerminal(r.status) ? (
                    <div class="muted" data-fact="waiting-for">
                      {r.waiting_for}
                    </div>
                  ) : null}
                  {r.progress && !isTerminal(r.status) ? (
                    <div class="muted" title="steps ended of all">
                      {r.progress.done}/{r.progress.total}
                    </div>
                  ) : null}
                </td>
                <td>
                  <Time iso={r.created_at} />
                </td>
                <td class="nowrap">
                  {duration((r.finished_at ? Date.parse(r.finished_at) : Date.now()) - Date.parse(r.created_at))}
                </td>
                <td class="err clip" title={r.error ?? ''}>
                  {r.error ?? ''}
                </td>
              </tr>
            ))}
            {!loading && rows.length === 0 ? (
              <tr>
                <td colSpan={7} class="empty">
                  No runs{query.toString() ? ' match these filters' : ' yet'}.
                </td>
              </tr>
            ) : null}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Pages">
        {!firstPage ? (
          <button type="button" onClick={() => history.back()}>
            ← Newer
          </button>
        ) : null}
        {!firstPage ? (
          <button type="button" onClick={() => set('after', '')}>
            First page
          </button>
        ) : null}
        {data?.last_key ? (
          <button
            type="button"
            onClick={() => {
              const next = new URLSearchParams(query);
              next.set('after', data.last_key!);
              navigate(`/runs?${next}`);
            }}
          >
            Older →
          </button>
        ) : null}
      </nav>
    </Page>
  );
}
