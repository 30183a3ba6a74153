import { useState } from 'preact/hooks';
import { api, type ApiError } from '../api';
import { ErrorBox, Json, Link, Page, parseJson, RunLink, Status, time, useLoad } from '../common';
import { navigate } from '../router';
import { Pauses } from './pauses';
import { Secrets } from './secrets';

interface Workflow {
  id: string;
  version: number;
  name: string;
  description?: string;
  enabled: boolean;
  steps: Array<Record<string, unknown>>;
  created_at: string;
  updated_at: string;
}

export function WorkflowsPage() {
  const { data, error } = useLoad((signal) => api<{ workflows: Workflow[] }>('/workflows?limit=100', { signal }), []);
  return (
    <Page
      title="Workflows"
      actions={
        <Link to="/workflows/new" class="button primary">
          New workflow
        </Link>
      }
    >
      <ErrorBox error={error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Id</th>
            <th scope="col">Version</th>
            <th scope="col">Steps</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {(data?.workflows ?? []).map((w) => (
            <tr key={w.id}>
              <td>
                <Link to={`/workflows/${w.id}`}>{w.name}</Link>
                {w.description ? <div class="muted">{w.description}</div> : null}
              </td>
              <td class="mono">{w.id}</td>
              <td>v{w.version}</td>
              <td>{w.steps.length}</td>
              <td>{time(w.updated_at)}</td>
            </tr>
          ))}
          {data && data.workflows.length === 0 ? (
            <tr>
              <td colSpan={5} class="empty">
                No stored workflows yet.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <Pauses />
      <Secrets />
    </Page>
  );
}

export function WorkflowPage({ id }: { id: string }) {
  const { data, error } = useLoad(
    async (signal) => {
      const [workflow, versions, executions] = await Promise.all([
        api<Workflow>(`/workflows/${id}`, { signal }),
        api<{ versions: Array<{ version: number; definition: unknown; saved_at: string }> }>(
          `/workflows/${id}/versions`,
          { signal },
        ).catch(() => ({ versions: [] })),
        api<{ executions: any[] }>(`/workflows/${id}/executions?limit=20`, { signal }),
      ]);
      return { workflow, versions: versions.versions, executions: executions.executions };
    },
    [id],
  );
  if (!data)
    return (
      <Page title="Workflow">
        <ErrorBox error={error} />
        {!error ? <p aria-busy="true">Loading…</p> : null}
      </Page>
    );
  const { workflow: w, versions, executions } = data;
  const { id: _id, version: _v, created_at: _c, updated_at: _u, ...definition } = w;
  return (
    <Page
      title={w.name}
      actions={
        <Link to={`/workflows/${id}/edit`} class="button">
          Edit
        </Link>
      }
    >
      <p class="muted">
        <span class="mono">{w.id}</span> · version {w.version} · updated {time(w.updated_at)}
      </p>
      <ExecuteForm id={id} />
      <h2>Definition</h2>
      {/* biome-ignore lint/a11y/useAriaPropsSupportedByRole: the label names the block for screen readers and the browser tests */}
      <pre class="code" aria-label="Definition JSON">
        {JSON.stringify(definition, null, 2)}
      </pre>
      <h2>Versions</h2>
      <ol class="versions">
        {versions
          .slice()
          .reverse()
          .map((v) => (
            <li key={v.version}>
              <Json value={v.definition} label={`v${v.version} · ${time(v.saved_at)}`} />
            </li>
          ))}
      </ol>
      <h2>Recent executions</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Execution</th>
            <th scope="col">Status</th>
            <th scope="col">Version</th>
            <th scope="col">Started</th>
          </tr>
        </thead>
        <tbody>
          {executions.map((e) => (
            <tr key={e.execution_id}>
              <td>
                <RunLink id={e.execution_id} />
              </td>
              <td>
                <Status status={e.status} />
              </td>
              <td>v{e.workflow_version}</td>
              <td>{e.started_at ? time(e.started_at) : 'queued'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}

function ExecuteForm({ id }: { id: string }) {
  const [data, setData] = useState('{}');
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      aria-labelledby="execute-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const trigger = parseJson(data, 'trigger_data');
          const res = await api<{ execution_id: string }>(`/workflows/${id}/execute`, {
            method: 'POST',
            body: trigger === undefined ? {} : { trigger_data: trigger },
            headers: key ? { 'idempotency-key': key } : {},
          });
          navigate(`/runs/${encodeURIComponent(res.execution_id)}`);
        } catch (err) {
          setError(err);
          setBusy(false);
        }
      }}
    >
      <h2 id="execute-title">Execute</h2>
      <label>
        Trigger data (JSON)
        <textarea
          name="trigger_data"
          rows={4}
          class="mono"
          value={data}
          onInput={(e) => setData(e.currentTarget.value)}
        />
      </label>
      <label>
        Idempotency-Key (optional)
        <input name="idempotency_key" value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      </label>
      <ErrorBox error={error} />
      <button type="submit" class="primary" disabled={busy}>
        Execute
      </button>
    </form>
  );
}

const TEMPLATE = JSON.stringify(
  {
    name: 'my-workflow',
    description: '',
    steps: [{ id: 'hello', type: 'log', config: { message: 'hello {{trigger.name}}' } }],
  },
  null,
  2,
);

/** Where a problem's path points, as `steps[0].config.url`, for the list beside the editor. */
function pathText(path: string): string {
  return path || '(the whole definition)';
}

export function WorkflowEditPage({ id }: { id?: string }) {
  const existing = useLoad(
    (signal) => (id ? api<Workflow>(`/workflows/${id}`, { signal }) : Promise.resolve(null)),
    [id],
  );
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const initial = existing.data
    ? (({ id: _i, version: _v, created_at: _c, updated_at: _u, ...d }) => JSON.stringify(d, null, 2))(existing.data)
    : TEMPLATE;
  const value = text ?? initial;
  return (
    <Page title={id ? `Edit ${existing.data?.name ?? id}` : 'New workflow'}>
      <form
        class="editor"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(null);
          try {
            const body = parseJson(value, 'definition');
            const saved = await api<Workflow>(id ? `/workflows/${id}` : '/workflows', {
              method: id ? 'PUT' : 'POST',
              body,
            });
            navigate(`/workflows/${saved.id}`);
          } catch (err) {
            setError(err as ApiError);
            setBusy(false);
          }
        }}
      >
        <label for="definition">Definition (JSON)</label>
        <textarea
          id="definition"
          name="definition"
          class="mono"
          rows={24}
          spellcheck={false}
          value={value}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby="problems"
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <div id="problems" aria-live="polite">
          {error ? (
            <div class="error" role="alert">
              <strong>{error.message}</strong>
              {error.problems?.length ? (
                <ul class="problems">
                  {error.problems.map((p) => (
                    <li key={p.path + p.message} data-path={p.path}>
                      <code>{pathText(p.path)}</code>: {p.message}
                    </li>
                  ))}
                </ul>
              ) : null}
            </div>
          ) : null}
        </div>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {id ? 'Save as a new version' : 'Create'}
          </button>
          <Link to={id ? `/workflows/${id}` : '/workflows'} class="button">
            Back
          </Link>
        </div>
      </form>
    </Page>
  );
}
