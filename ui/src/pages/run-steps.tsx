import { duration, Json, normalStatus, Status } from '../common';
import type { Execution, ExecutionStep, Run, RunStep } from './run';
import { reusedFrom } from './run-progress';

interface Row {
  key: string;
  name: string;
  type: string | null;
  label: string | null;
  status: string;
  attempts: number;
  duration_ms: number | null;
  input: unknown;
  output: unknown;
  error: string | null;
  /** A failed step's sentence for people (the definition's `messages`), shown above its error. */
  message?: string;
  /** A step of a parallel step's branch: shown under it, indented. */
  branch?: string;
  branches?: ExecutionStep['branches'];
}

/** An execution's steps are its definition's (every one, run or not); a code run's are the calls it made. */
function rows(run: Run, execution: Execution | null): Row[] {
  if (execution?.steps.length) {
    return execution.steps.map((s) => ({
      key: s.step_id,
      name: s.step_id,
      type: s.type,
      label: null,
      status: s.status,
      attempts: s.attempts,
      duration_ms: s.duration_ms,
      input: s.input,
      output: s.output,
      error: s.error,
      ...(s.message ? { message: s.message } : {}),
      ...(s.branch ? { branch: s.branch } : {}),
      ...(s.branches ? { branches: s.branches } : {}),
    }));
  }
  return run.steps.map((s: RunStep) => ({
    key: String(s.seq),
    name: s.name,
    type: s.kind === 'poll' ? 'poll' : null,
    label: s.label ?? null,
    status: s.status,
    attempts: s.attempts,
    duration_ms: s.duration_ms,
    input: s.input,
    output: s.output,
    error: s.error,
  }));
}

/** Each step with its status (polls and timed-out steps as such), attempts, duration, input, output and error. */
export function Steps({ run, execution }: { run: Run; execution: Execution | null }) {
  const list = rows(run, execution);
  if (list.length === 0) return <p class="muted">No steps yet.</p>;
  return (
    <table class="steps">
      <thead>
        <tr>
          <th scope="col">Step</th>
          <th scope="col">Status</th>
          <th scope="col">Attempts</th>
          <th scope="col">Duration</th>
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {list.map((s) => (
          <tr
            key={s.key}
            data-step={s.name}
            data-status={normalStatus(s.status)}
            data-type={s.type ?? undefined}
            class={s.branch ? 'branch-step' : undefined}
          >
            <th scope="row">
              {s.branch ? (
                <span class="muted" title={`branch ${s.branch}`}>
                  ↳ {s.branch}:{' '}
                </span>
              ) : null}
              <span class="mono">{s.name}</span>
              {s.type ? <span class="muted"> ({s.type})</span> : null}
              {s.label ? <div class="muted">{s.label}</div> : null}
            </th>
            <td>
              <Status status={s.status} />
              {s.branches ? (
                <ul class="plain branches">
                  {Object.entries(s.branches).map(([name, b]) => (
                    <li key={name} data-branch={name}>
                      <span class="mono">{name}</span> <Status status={b.status} />
                    </li>
                  ))}
                </ul>
              ) : null}
            </td>
            <td>{s.attempts}</td>
            <td>
              {reusedFrom(s) !== null && normalStatus(s.status) === 'success' ? (
                <span title={`taken from ${reusedFrom(s)}: no work done here`}>reused</span>
              ) : (
                duration(s.duration_ms)
              )}
            </td>
            <td>
              {s.message ? <div class="step-message">{s.message}</div> : null}
              {s.error ? (
                <div class="step-error" role="note">
                  {normalStatus(s.status) === 'success' ? <span class="muted">an earlier attempt failed: </span> : null}
                  {s.error}
                </div>
              ) : null}
              {s.type !== 'parallel' ? <Json value={s.input} label="input" /> : null}
              <Json value={s.output} label="output" />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
