import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, time, useLoad } from '../common';
import { BY, Reasoned } from './reasoned';

interface Queue {
  queue: string;
  ready: number;
  due: number;
  running: number;
  dead: number;
  paused: boolean;
}

interface Pause {
  kind: 'workflow' | 'queue';
  name: string;
  /** Set when `name` is a stored workflow's id: the pause holds that stored workflow's executions alone. */
  stored_workflow?: string;
  paused_by: string;
  reason: string;
  paused_at: string;
}

const operate = (action: 'pause' | 'resume', kind: Pause['kind'], name: string, reason: string) =>
  api(`/operator/${action}`, { method: 'POST', body: { kind, name, by: BY, reason } });

function Paused({ pause }: { pause: Pause | undefined }) {
  if (!pause) return <span class="muted">running</span>;
  return (
    <span data-fact="paused">
      paused by {pause.paused_by} {time(pause.paused_at)}: {pause.reason}
    </span>
  );
}

/**
 * Pause and resume from the dashboard: every queue with its tasks and a pause or resume button, the paused workflows
 * (a paused workflow's runs start no new step), and a form to pause a workflow by name.
 */
export function Pauses() {
  const { data, error, reload } = useLoad(async (signal) => {
    const [queues, pauses] = await Promise.all([
      api<{ queues: Queue[] }>('/queues', { signal }),
      api<{ pauses: Pause[] }>('/operator/pauses', { signal }),
    ]);
    return { queues: queues.queues, pauses: pauses.pauses };
  }, []);
  const [workflow, setWorkflow] = useState('');
  const pauseOf = (kind: Pause['kind'], name: string) => data?.pauses.find((p) => p.kind === kind && p.name === name);
  const act = (action: 'pause' | 'resume', kind: Pause['kind'], name: string) => async (reason: string) => {
    await operate(action, kind, name, reason);
    reload();
  };
  const workflows = (data?.pauses ?? []).filter((p) => p.kind === 'workflow');
  return (
    <>
      <ErrorBox error={error} />
      <h2>Queues</h2>
      <table class="queues">
        <thead>
          <tr>
            <th scope="col">Queue</th>
            <th scope="col">Ready (due)</th>
            <th scope="col">Running</th>
            <th scope="col">Dead</th>
            <th scope="col">State</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(data?.queues ?? []).map((q) => (
            <tr key={q.queue} data-queue={q.queue}>
              <td class="mono">{q.queue}</td>
              <td>
                {q.ready} ({q.due})
              </td>
              <td>{q.running}</td>
              <td>{q.dead}</td>
              <td>
                <Paused pause={pauseOf('queue', q.queue)} />
              </td>
              <td>
                {q.paused ? (
                  <Reasoned label="Resume" confirm={`Resume queue ${q.queue}`} act={act('resume', 'queue', q.queue)} />
                ) : (
                  <Reasoned label="Pause" confirm={`Pause queue ${q.queue}`} act={act('pause', 'queue', q.queue)} />
                )}
              </td>
            </tr>
          ))}
          {data && data.queues.length === 0 ? (
            <tr>
              <td colSpan={6} class="empty">
                No queue holds a task.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <h2>Paused workflows</h2>
      <ul class="plain paused-workflows">
        {workflows.map((p) => (
          <li key={p.name} data-workflow={p.name}>
            <span class="mono">{p.stored_workflow ?? p.name}</span>
            {p.stored_workflow ? <span class="muted"> (stored workflow {p.name})</span> : null} <Paused pause={p} />{' '}
            <Reasoned label="Resume" confirm={`Resume workflow ${p.name}`} act={act('resume', 'workflow', p.name)} />
          </li>
        ))}
        {data && workflows.length === 0 ? <li class="muted">No workflow is paused.</li> : null}
      </ul>
      <div class="actions">
        <input
          name="workflow"
          aria-label="Workflow to pause"
          placeholder="a code workflow's name, a stored workflow's id (wf_…), or runledger.stored for every stored one"
          value={workflow}
          onInput={(e) => setWorkflow(e.currentTarget.value)}
        />
        <Reasoned
          label="Pause workflow"
          confirm={`Pause workflow ${workflow.trim()}`}
          disabled={!workflow.trim()}
          act={async (reason) => {
            await act('pause', 'workflow', workflow.trim())(reason);
            setWorkflow('');
          }}
        />
      </div>
    </>
  );
}
