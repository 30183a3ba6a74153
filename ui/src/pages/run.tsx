import type { ExecutionRecord, RunRecord, StepRecord } from '../../../src/client/records.js';
import { RUN_EVENT } from '../../../src/runtime/events.js';
import { useEffect, useState } from 'preact/hooks';
import { api, apiOptional, offered, subscribe } from '../api';
import {
  duration,
  ErrorBox,
  isTerminal,
  Json,
  Link,
  Page,
  RunLink,
  Status,
  throttle,
  time,
  useClock,
  useLoad,
  When,
} from '../common';
import { StoredWorkflow, useWorkflowNames } from '../names';
import { Gantt, type JournalEvent } from './gantt';
import { journalRows } from './journal-rows';
import { RunActions } from './run-actions';
import { CompareLink } from './run-diff';
import { pending, progressText, stepCounts } from './run-progress';
import { Steps } from './run-steps';

/** A step of `GET /runs/{id}` (a code run's call, or the interpreter's for an execution). */
export type RunStep = RunRecord['steps'][number];

/** `GET /runs/{id}`: a run of any kind. */
export type Run = RunRecord;

/** A rerun or a retry of failed branches, seen from either execution. */
export type ExecutionLink = ExecutionRecord['reruns'][number];

/** A step of a stored workflow's execution: every definition step, run or not; branch steps name their parallel step and branch. */
export type ExecutionStep = StepRecord;

/** `GET /workflows/{id}/executions/{execution_id}`. */
export type Execution = ExecutionRecord;

async function loadRun(
  id: string,
  signal: AbortSignal,
): Promise<{ run: Run; execution: Execution | null; paths: Set<string> }> {
  const [run, paths] = await Promise.all([api<Run>(`/runs/${encodeURIComponent(id)}`, { signal }), offered()]);
  const execution = run.workflow_id
    ? await apiOptional<Execution>(`/workflows/${run.workflow_id}/executions/${encodeURIComponent(id)}`, signal)
    : null;
  return { run, execution, paths };
}

/** What a link says it did: "from step layout", "branches powerpoint". */
function linkText(link: ExecutionLink): string {
  if (link.branches?.length)
    return `retry of branch${link.branches.length > 1 ? 'es' : ''} ${link.branches.join(', ')}`;
  const from = link.from_step ? `from step ${link.from_step}` : 'from the start';
  return link.fallback
    ? `${from}, automatic: ${link.fallback.rule} ${link.fallback.attempt} of ${link.fallback.max}`
    : from;
}

export function RunPage({ id }: { id: string }) {
  const { data, error, reload } = useLoad((signal) => loadRun(id, signal), [id]);
  const [events, setEvents] = useState<JournalEvent[]>([]);
  const [streamEnded, setStreamEnded] = useState(false);
  const names = useWorkflowNames(data ? [data.run] : undefined);
  const waitingFor = data && !isTerminal(data.run.status) ? pending(events) : null;
  useClock(1000, waitingFor !== null);

  useEffect(() => {
    setEvents([]);
    setStreamEnded(false);
    const controller = new AbortController();
    const refresh = throttle(reload, 500);
    subscribe(
      `/runs/${encodeURIComponent(id)}/events/stream`,
      (batch) => {
        setEvents((old) => [
          ...old,
          ...batch.map((b) => b.data as JournalEvent).filter((e) => !old.length || e.version > old.at(-1)!.version),
        ]);
        refresh();
      },
      {
        signal: controller.signal,
        onEnd: () => {
          setStreamEnded(true);
          refresh();
        },
      },
    );
    return () => controller.abort();
  }, [id]);

  if (error && !data)
    return (
      <Page title={`Run ${id}`} tab={id}>
        <ErrorBox error={error} />
      </Page>
    );
  if (!data)
    return (
      <Page title={`Run ${id}`} tab={id}>
        <p aria-busy="true">Loading…</p>
      </Page>
    );
  const { run, execution, paths } = data;
  const ended = isTerminal(run.status);
  const state = execution?.state ?? run.state ?? null;
  const currentStep = execution?.current_step ?? run.current?.name ?? null;
  const label = execution?.label ?? run.current?.label ?? null;
  const children = events.filter((e) => e.type === RUN_EVENT.childStarted).map((e) => e.data.childId as string);
  const parent = (events.find((e) => e.type === RUN_EVENT.runStarted)?.data as any)?.parent as
    | string
    | { runId?: string }
    | undefined;
  const parentId = typeof parent === 'string' ? parent : parent?.runId;
  // a run started again from an ended one (a retry) names it in its first event
  const retryOf = events.find((e) => e.type === RUN_EVENT.runStarted)?.data.retryOf as string | undefined;
  const counts = execution ? stepCounts(execution.steps) : null;

  return (
    <Page
      title={
        <>
          Run <span class="mono">{run.id}</span>
        </>
      }
      tab={
        run.workflow_id
          ? names.has(run.workflow_id)
            ? `${run.id} · ${names.get(run.workflow_id)}`
            : run.id
          : `${run.id} · ${run.workflow}`
      }
      actions={<RunActions run={run} execution={execution} paths={paths} onDone={reload} />}
    >
      <ErrorBox error={error} />
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>
            <Status status={run.status} /> {!ended ? <span class="live on">live</span> : null}
          </dd>
        </div>
        {run.waiting_for && !ended ? (
          <div>
            <dt>Waiting for</dt>
            <dd data-fact="waiting-for">{run.waiting_for}</dd>
          </div>
        ) : null}
        <div>
          <dt>Kind</dt>
          <dd>
            {run.kind === 'session' ? (
              <Link to={`/agents/${encodeURIComponent(run.id)}`}>agent run</Link>
            ) : (
              (run.kind ?? '—')
            )}
          </dd>
        </div>
        <div>
          <dt>Workflow</dt>
          <dd>
            {run.workflow_id ? (
              <StoredWorkflow id={run.workflow_id} names={names} />
            ) : (
              <span class="mono">{run.workflow}</span>
            )}
            {execution ? ` v${execution.workflow_version}` : ''}
          </dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>{time(run.created_at)}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>{duration((run.finished_at ? Date.parse(run.finished_at) : Date.now()) - Date.parse(run.created_at))}</dd>
        </div>
        {state ? (
          <div>
            <dt>State</dt>
            <dd class="mono" data-fact="state">
              {state}
            </dd>
          </div>
        ) : null}
        {currentStep && !ended ? (
          <div>
            <dt>Current step</dt>
            <dd data-fact="current">
              <span class="mono">{currentStep}</span>
              {label ? <> — {label}</> : null}
            </dd>
          </div>
        ) : null}
        {counts ? (
          <div>
            <dt>Progress</dt>
            <dd data-fact="progress">
              <progress max={counts.total} value={counts.ran} aria-label="steps ran" /> {progressText(counts)}
            </dd>
          </div>
        ) : null}
        {waitingFor?.kind === 'sleep' ? (
          <div>
            <dt>Wakes up</dt>
            <dd data-fact="wakes">
              <When at={waitingFor.at} /> <span class="muted">from sleep {waitingFor.name}</span>
            </dd>
          </div>
        ) : null}
        {waitingFor?.kind === 'wait' ? (
          <div>
            <dt>Waits for</dt>
            <dd data-fact="waits">
              signal <span class="mono">{waitingFor.name}</span>
              {waitingFor.at !== null ? (
                <>
                  , gives up at <When at={waitingFor.at} />
                </>
              ) : null}
            </dd>
          </div>
        ) : null}
        {execution && !ended ? (
          <div>
            <dt>ETA</dt>
            <dd data-fact="eta">
              {execution.eta_seconds === null ? (
                <span class="muted" title="no step history yet for every remaining step">
                  not known yet
                </span>
              ) : (
                `~${duration(execution.eta_seconds * 1000)}`
              )}
            </dd>
          </div>
        ) : null}
        {execution?.rerun_of ? (
          <div>
            <dt>Rerun of</dt>
            <dd data-fact="rerun-of">
              <RunLink id={execution.rerun_of.execution_id} />{' '}
              <span class="muted">({linkText(execution.rerun_of)})</span> ·{' '}
              <CompareLink original={execution.rerun_of.execution_id} run={run.id} />
            </dd>
          </div>
        ) : null}
        {retryOf ? (
          <div>
            <dt>Retry of</dt>
            <dd data-fact="retry-of">
              <RunLink id={retryOf} /> · <CompareLink original={retryOf} run={run.id} />
            </dd>
          </div>
        ) : null}
        {execution?.reruns.length ? (
          <div>
            <dt>Reruns</dt>
            <dd data-fact="reruns">
              <ul class="plain">
                {execution.reruns.map((r) => (
                  <li key={r.execution_id}>
                    <RunLink id={r.execution_id} /> <span class="muted">({linkText(r)})</span>
                  </li>
                ))}
              </ul>
            </dd>
          </div>
        ) : null}
        {execution?.cancelled_by ? (
          <div>
            <dt>Cancelled by</dt>
            <dd data-fact="cancelled-by">
              {execution.cancelled_by}
              {execution.cancel_reason ? <span class="muted"> ({execution.cancel_reason})</span> : null}
            </dd>
          </div>
        ) : null}
        {parentId ? (
          <div>
            <dt>Parent</dt>
            <dd>
              <RunLink id={parentId} />
            </dd>
          </div>
        ) : null}
        {run.compensations ? (
          <div>
            <dt>Compensations</dt>
            <dd>
              {run.compensations.ran} ran, {run.compensations.failed} failed
            </dd>
          </div>
        ) : null}
      </dl>
      {execution?.message ? (
        <p class="run-message" role="status">
          {execution.message}
        </p>
      ) : null}
      {run.error ? (
        <div class="error" role="alert">
          <strong>Error:</strong> <span class="run-error">{run.error}</span>
        </div>
      ) : null}
      <div class="two">
        <Json value={run.input} label="input" />
        <Json value={run.output} label="output" />
      </div>
      {execution?.trigger_data ? <Json value={execution.trigger_data} label="trigger data" /> : null}

      <h2>Timeline</h2>
      <Gantt events={events} ended={ended || streamEnded} />

      <h2>Steps</h2>
      <Steps run={run} execution={execution} />

      {children.length ? (
        <>
          <h2>Child runs</h2>
          <ul>
            {children.map((c) => (
              <li key={c}>
                <RunLink id={c} />
              </li>
            ))}
          </ul>
        </>
      ) : null}

      <h2>Journal</h2>
      <ol class="journal" aria-label="Journal events, oldest first">
        {journalRows(events).map(({ event: e, text }) => (
          <li key={e.version} data-type={e.type}>
            <span class="muted mono">
              #{e.version}
              {text && text.batches > 1 ? `–#${text.last}` : ''}
            </span>{' '}
            <span class="mono evtype">{e.type}</span>
            {text && text.batches > 1 ? <span class="muted"> ×{text.batches}</span> : null}{' '}
            <time dateTime={e.timestamp} class="muted">
              +{duration(Date.parse(e.timestamp) - Date.parse(events[0]!.timestamp))}
            </time>
            {e.type === RUN_EVENT.sleepStarted && typeof e.data?.until === 'number' ? (
              <span class="muted">
                {' '}
                until <When at={e.data.until} />
              </span>
            ) : null}
            {e.type === RUN_EVENT.waitStarted && typeof e.data?.deadline === 'number' ? (
              <span class="muted">
                {' '}
                deadline <When at={e.data.deadline} />
              </span>
            ) : null}
            <Json value={text ? { step: e.data?.name, seq: e.data?.seq, at: e.data?.at, text: text.joined } : e.data} />
          </li>
        ))}
      </ol>
    </Page>
  );
}
