import type { ComponentChildren } from 'preact';
import type { RunDiffRecord } from '../../../src/server/records/run-diff.js';
import { api } from '../api';
import { duration, ErrorBox, Json, Link, Page, RunLink, Status, useLoad } from '../common';

type Side = RunDiffRecord['a'];
type StepRow = RunDiffRecord['steps'][number];
type StepSide = NonNullable<StepRow['a']>;

const MARK: Record<StepRow['change'], string> = { same: '', changed: '~', added: '+', removed: '−' };
const CHANGE: Record<StepRow['change'], string> = {
  same: 'same',
  changed: 'changed',
  added: 'in b only',
  removed: 'in a only',
};

/** The link from a rerun or retry to the diff against the run it started from. */
export function CompareLink({ original, run }: { original: string; run: string }) {
  return (
    <Link to={`/runs/${encodeURIComponent(original)}/diff/${encodeURIComponent(run)}`} class="compare">
      compare with the original
    </Link>
  );
}

/** `/runs/{a}/diff/{b}`: two runs side by side, steps aligned by name in call order, what differs highlighted. */
export function RunDiffPage({ a, b }: { a: string; b: string }) {
  const { data, error } = useLoad(
    (signal) => api<RunDiffRecord>(`/runs/${encodeURIComponent(a)}/diff/${encodeURIComponent(b)}`, { signal }),
    [a, b],
  );
  const title = 'Compare runs';
  if (!data) return <Page title={title}>{error ? <ErrorBox error={error} /> : <p aria-busy="true">Loading…</p>}</Page>;
  const differs = (field: RunDiffRecord['differs'][number]) => (data.differs.includes(field) ? 'differs' : undefined);
  const row = (
    label: string,
    field: RunDiffRecord['differs'][number] | null,
    show: (side: Side) => ComponentChildren,
  ) => (
    <tr class={field ? differs(field) : undefined} data-field={field ?? undefined}>
      <th scope="row">{label}</th>
      <td>{show(data.a)}</td>
      <td>{show(data.b)}</td>
    </tr>
  );
  return (
    <Page title={title} tab={`${a} ↔ ${b}`}>
      <p data-fact="summary">
        {data.same
          ? 'Nothing differs.'
          : `${data.counts.changed} changed, ${data.counts.added} in b only, ${data.counts.removed} in a only, ${data.counts.same} the same${data.differs.length ? `; the runs differ in ${data.differs.join(', ')}` : ''}.`}
      </p>
      <table class="run-diff">
        <thead>
          <tr>
            <th scope="col" />
            <th scope="col">
              a: <RunLink id={data.a.id} />
            </th>
            <th scope="col">
              b: <RunLink id={data.b.id} />
            </th>
          </tr>
        </thead>
        <tbody>
          {row('Workflow', 'workflow', (s) => (
            <span class="mono">{s.workflow}</span>
          ))}
          {row('Version', 'version', (s) => s.version ?? '—')}
          {row('Status', 'status', (s) => (
            <Status status={s.status} />
          ))}
          {row('State', 'state', (s) => s.state ?? '—')}
          {row('Duration', 'duration', (s) => (s.duration_ms === null ? 'not ended' : duration(s.duration_ms)))}
          {row('Input', 'input', (s) => (
            <Json value={s.input} />
          ))}
          {row('Output', 'output', (s) => (
            <Json value={s.output} />
          ))}
          {row('Error', 'error', (s) => (s.error ? <span class="step-error">{s.error}</span> : '—'))}
        </tbody>
      </table>

      <h2>Steps</h2>
      {data.steps.length === 0 ? (
        <p class="muted">Neither run has steps.</p>
      ) : (
        <table class="run-diff steps">
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col">a</th>
              <th scope="col">b</th>
            </tr>
          </thead>
          <tbody>
            {data.steps.map((s, i) => (
              <tr key={i} data-step={s.name} data-change={s.change} class={`change-${s.change}`}>
                <th scope="row">
                  <span aria-hidden="true">{MARK[s.change]} </span>
                  <span class="mono">{s.name}</span>
                  <div class="muted">{CHANGE[s.change]}</div>
                  {s.differs.length ? <div class="muted">differs: {s.differs.join(', ')}</div> : null}
                </th>
                <StepCell step={s.a} differs={s.differs} />
                <StepCell step={s.b} differs={s.differs} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Page>
  );
}

function StepCell({ step, differs }: { step: StepSide | null; differs: StepRow['differs'] }) {
  if (!step) return <td class="muted">—</td>;
  const mark = (field: StepRow['differs'][number]) => (differs.includes(field) ? 'differs' : undefined);
  return (
    <td>
      <div>
        <span class={mark('status')} data-field="status">
          <Status status={step.status} />
        </span>{' '}
        <span class={mark('attempts')} data-field="attempts">
          {step.attempts} attempt{step.attempts === 1 ? '' : 's'}
        </span>{' '}
        ·{' '}
        <span class={mark('duration')} data-field="duration">
          {duration(step.duration_ms)}
        </span>
      </div>
      {step.error ? (
        <div class={`step-error ${mark('error') ?? ''}`} data-field="error">
          {step.error}
        </div>
      ) : mark('error') ? (
        <div class="muted differs" data-field="error">
          no error
        </div>
      ) : null}
      <div class={mark('input')} data-field="input">
        <Json value={step.input} label="input" />
      </div>
      <div class={mark('output')} data-field="output">
        <Json value={step.output} label="output" />
      </div>
    </td>
  );
}
