import { useEffect, useState } from 'preact/hooks';
import { api, apiOptional, offered, subscribe } from '../api';
import { duration, ErrorBox, isTerminal, Json, Link, normalStatus, Page, parseJson, RunLink, Status, throttle, time, useLoad } from '../common';
import { navigate } from '../router';
import { Gantt, type JournalEvent } from './gantt';

interface Step {
  seq: number;
  name: string;
  status: string;
  attempts: number;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  input: unknown;
  output: unknown;
  error: string | null;
}

interface Run {
  id: string;
  workflow: string;
  workflow_id: string | null;
  kind?: string;
  status: string;
  error: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
  input: unknown;
  output: unknown;
  steps: Step[];
  state?: string | null;
  current_step?: string | null;
  label?: string | null;
  progress?: { done: number; total: number } | null;
  eta_seconds?: number | null;
  compensations?: { ran: number; failed: number } | null;
}

async function loadRun(id: string, signal: AbortSignal): Promise<{ run: Run; execution: any; paths: Set<string> }> {
  const [run, paths] = await Promise.all([api<Run>(`/runs/${encodeURIComponent(id)}`, { signal }), offered()]);
  const execution = run.workflow_id ? await apiOptional(`/workflows/${run.workflow_id}/executions/${encodeURIComponent(id)}`, signal) : null;
  return { run, execution, paths };
}

export function RunPage({ id }: { id: string }) {
  const { data, error, reload } = useLoad((signal) => loadRun(id, signal), [id]);
  const [events, setEvents] = useState<JournalEvent[]>([]);
  const [streamEnded, setStreamEnded] = useState(false);

  useEffect(() => {
    setEvents([]);
    setStreamEnded(false);
    const controller = new AbortController();
    const refresh = throttle(reload, 500);
    subscribe(`/runs/${encodeURIComponent(id)}/events/stream`, (batch) => {
      setEvents((old) => [...old, ...batch.map((b) => b.data as JournalEvent).filter((e) => !old.length || e.version > old.at(-1)!.version)]);
      refresh();
    }, { signal: controller.signal, onEnd: () => { setStreamEnded(true); refresh(); } });
    return () => controller.abort();
  }, [id]);

  if (error && !data) return <Page title={`Run ${id}`}><ErrorBox error={error} /></Page>;
  if (!data) return <Page title={`Run ${id}`}><p aria-busy="true">Loading…</p></Page>;
  const { run, execution, paths } = data;
  const biz = { ...run, ...(execution ?? {}) } as Run & Record<string, any>;
  const ended = isTerminal(run.status);
  const children = events.filter((e) => e.type === 'child.started').map((e) => e.data.childId as string);
  const parent = (events.find((e) => e.type === 'run.started')?.data as any)?.parent as string | { runId?: string } | undefined;
  const parentId = typeof parent === 'string' ? parent : parent?.runId;

  return (
    <Page title={<>Run <span class="mono">{run.id}</span></>} actions={<RunActions run={run} paths={paths} onDone={reload} />}>
      <ErrorBox error={error} />
      <dl class="facts">
        <div><dt>Status</dt><dd><Status status={run.status} /> {!ended ? <span class="live on">live</span> : null}</dd></div>
        <div><dt>Kind</dt><dd>{run.kind === 'session' ? <Link to={`/agents/${encodeURIComponent(run.id)}`}>agent session</Link> : (run.kind ?? '—')}</dd></div>
        <div><dt>Workflow</dt><dd>{run.workflow_id ? <Link to={`/workflows/${run.workflow_id}`} class="mono">{run.workflow_id}</Link> : <span class="mono">{run.workflow}</span>}{execution?.workflow_version ? ` v${execution.workflow_version}` : ''}</dd></div>
        <div><dt>Started</dt><dd>{time(run.created_at)}</dd></div>
        <div><dt>Duration</dt><dd>{duration((run.finished_at ? Date.parse(run.finished_at) : Date.now()) - Date.parse(run.created_at))}</dd></div>
        {biz.state ? <div><dt>State</dt><dd class="mono">{biz.state}</dd></div> : null}
        {biz.label ? <div><dt>Label</dt><dd>{biz.label}</dd></div> : null}
        {biz.current_step ? <div><dt>Current step</dt><dd class="mono">{biz.current_step}</dd></div> : null}
        {biz.progress ? (
          <div><dt>Progress</dt><dd><progress max={biz.progress.total} value={biz.progress.done} aria-label="progress" /> {biz.progress.done}/{biz.progress.total}</dd></div>
        ) : null}
        {biz.eta_seconds != null && !ended ? <div><dt>ETA</dt><dd>{duration(biz.eta_seconds * 1000)}</dd></div> : null}
        {parentId ? <div><dt>Parent</dt><dd><RunLink id={parentId} /></dd></div> : null}
        {run.compensations ? <div><dt>Compensations</dt><dd>{run.compensations.ran} ran, {run.compensations.failed} failed</dd></div> : null}
      </dl>
      {run.error ? <div class="error" role="alert"><strong>Error:</strong> <span class="run-error">{run.error}</span></div> : null}
      <div class="two">
        <Json value={run.input} label="input" />
        <Json value={run.output} label="output" />
      </div>
      {execution?.trigger_data ? <Json value={execution.trigger_data} label="trigger data" /> : null}

      <h2>Timeline</h2>
      <Gantt events={events} ended={ended || streamEnded} />

      <h2>Steps</h2>
      <Steps run={run} execution={execution} paths={paths} onDone={reload} />

      {children.length ? (
        <>
          <h2>Child runs</h2>
          <ul>{children.map((c) => <li key={c}><RunLink id={c} /></li>)}</ul>
        </>
      ) : null}

      <h2>Journal</h2>
      <ol class="journal" aria-label="Journal events, oldest first">
        {events.map((e) => (
          <li key={e.version} data-type={e.type}>
            <span class="muted mono">#{e.version}</span> <span class="mono evtype">{e.type}</span>{' '}
            <time dateTime={e.timestamp} class="muted">+{duration(Date.parse(e.timestamp) - Date.parse(events[0]!.timestamp))}</time>
            <Json value={e.data} />
          </li>
        ))}
      </ol>
    </Page>
  );
}

function Steps({ run, execution, paths, onDone }: { run: Run; execution: any; paths: Set<string>; onDone: () => void }) {
  const canRerun = run.workflow_id && paths.has('POST /workflows/{id}/executions/{execution_id}/rerun');
  const [error, setError] = useState<unknown>(null);
  const stored: any[] = execution?.steps ?? [];
  const steps = stored.length ? stored.map((s) => ({ key: s.step_id, name: s.step_id, type: s.type, ...s })) : run.steps.map((s) => ({ key: String(s.seq), ...s }));
  const rerun = async (step: string) => {
    setError(null);
    try {
      const res = await api(`/workflows/${run.workflow_id}/executions/${encodeURIComponent(run.id)}/rerun`, { method: 'POST', body: { from_step: step } });
      const next = res?.execution_id ?? res?.id;
      if (next && next !== run.id) navigate(`/runs/${encodeURIComponent(next)}`);
      else onDone();
    } catch (e) {
      setError(e);
    }
  };
  if (steps.length === 0) return <p class="muted">No steps yet.</p>;
  return (
    <>
      <ErrorBox error={error} />
      <table class="steps">
        <thead>
          <tr><th scope="col">Step</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Duration</th><th scope="col">Details</th>{canRerun ? <th scope="col"><span class="sr-only">Actions</span></th> : null}</tr>
        </thead>
        <tbody>
          {steps.map((s: any) => (
            <tr key={s.key} data-step={s.name} data-status={normalStatus(s.status)}>
              <th scope="row" class="mono">{s.name}{s.type ? <span class="muted"> ({s.type})</span> : null}</th>
              <td><Status status={s.status} /></td>
              <td>{s.attempts}</td>
              <td>{duration(s.duration_ms)}</td>
              <td>
                {s.error ? (
                  <div class="step-error" role="note">
                    {normalStatus(s.status) === 'success' ? <span class="muted">an earlier attempt failed: </span> : null}
                    {typeof s.error === 'string' ? s.error : JSON.stringify(s.error)}
                  </div>
                ) : null}
                <Json value={s.input} label="input" />
                <Json value={s.output} label="output" />
              </td>
              {canRerun ? <td><button type="button" onClick={() => rerun(s.name)}>Rerun from here</button></td> : null}
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}

function RunActions({ run, paths, onDone }: { run: Run; paths: Set<string>; onDone: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [signalOpen, setSignalOpen] = useState(false);
  const [name, setName] = useState('');
  const [payload, setPayload] = useState('');
  const ended = isTerminal(run.status);
  const status = normalStatus(run.status);
  const act = async (fn: () => Promise<any>) => {
    setBusy(true);
    setError(null);
    try {
      const res = await fn();
      const next = res?.execution_id ?? res?.run_id;
      if (next && next !== run.id) navigate(`/runs/${encodeURIComponent(next)}`);
      else onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const cancel = () =>
    act(() =>
      paths.has('POST /runs/{id}/cancel')
        ? api(`/runs/${encodeURIComponent(run.id)}/cancel`, { method: 'POST' })
        : api(`/workflows/${run.workflow_id}/executions/${encodeURIComponent(run.id)}/cancel`, { method: 'POST' }),
    );
  const canCancel = !ended && (paths.has('POST /runs/{id}/cancel') || (run.workflow_id && paths.has('POST /workflows/{id}/executions/{execution_id}/cancel')));
  const canSignal = !ended && paths.has('POST /runs/{id}/signal');
  const canRetry = run.workflow_id && (status === 'failed' || status === 'partial_success') && paths.has('POST /workflows/{id}/executions/{execution_id}/retry');
  return (
    <div class="run-actions">
      {canCancel ? <button type="button" class="danger" disabled={busy} onClick={cancel}>Cancel run</button> : null}
      {canRetry ? (
        <button type="button" disabled={busy} onClick={() => act(() => api(`/workflows/${run.workflow_id}/executions/${encodeURIComponent(run.id)}/retry`, { method: 'POST' }))}>
          Retry failed branches
        </button>
      ) : null}
      {canSignal ? <button type="button" aria-expanded={signalOpen} onClick={() => setSignalOpen(!signalOpen)}>Signal…</button> : null}
      {signalOpen && canSignal ? (
        <form class="signal" aria-label="Send a signal" onSubmit={(e) => {
          e.preventDefault();
          act(async () => {
            const body = parseJson(payload, 'payload');
            const res = await api(`/runs/${encodeURIComponent(run.id)}/signal`, { method: 'POST', body: { name, ...(body !== undefined ? { payload: body } : {}) } });
            setSignalOpen(false);
            return res;
          });
        }}>
          <label>Name <input required value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
          <label>Payload (JSON) <textarea rows={3} value={payload} onInput={(e) => setPayload(e.currentTarget.value)} /></label>
          <button type="submit" class="primary" disabled={busy}>Send</button>
        </form>
      ) : null}
      <ErrorBox error={error} />
    </div>
  );
}
