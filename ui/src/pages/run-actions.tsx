import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, isTerminal, normalStatus, parseJson } from '../common';
import { navigate } from '../router';
import type { Execution, Run } from './run';

const RETRY = 'POST /workflows/{id}/executions/{execution_id}/retry';
const RERUN = 'POST /workflows/{id}/executions/{execution_id}/rerun';

/** The branches a retry can take: every branch of a parallel step that did not succeed (as the server decides). */
function failedBranches(execution: Execution | null): string[] {
  const names: string[] = [];
  for (const step of execution?.steps ?? []) {
    if (step.type !== 'parallel' || !step.branches) continue;
    for (const [name, b] of Object.entries(step.branches)) if (b.status !== 'success') names.push(name);
  }
  return names;
}

type Open = 'signal' | 'retry' | 'rerun' | 'cancel' | null;

/**
 * What anyone may do to a run, where the server offers it (read from `/openapi.json`): cancel it,
 * signal it (name + JSON), and for a stored workflow's execution retry its failed branches (those
 * chosen) or rerun it from a top-level step (optionally with new trigger data); both start a new
 * execution, and the page moves to it.
 */
export function RunActions({
  run,
  execution,
  paths,
  onDone,
}: {
  run: Run;
  execution: Execution | null;
  paths: Set<string>;
  onDone: () => void;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [open, setOpen] = useState<Open>(null);
  const ended = isTerminal(run.status);
  const status = normalStatus(run.status);
  const failed = failedBranches(execution);
  const base = execution ? `/workflows/${execution.workflow_id}/executions/${encodeURIComponent(run.id)}` : null;
  const act = async (fn: () => Promise<any>) => {
    setBusy(true);
    setError(null);
    try {
      const res = await fn();
      setOpen(null);
      const next = res?.execution_id;
      if (typeof next === 'string' && next !== run.id) navigate(`/runs/${encodeURIComponent(next)}`);
      else onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const toggle = (which: Open) => () => {
    setError(null);
    setOpen(open === which ? null : which);
  };
  const cancelRoute = paths.has('POST /runs/{id}/cancel')
    ? 'POST /runs/{id}/cancel'
    : 'POST /workflows/{id}/executions/{execution_id}/cancel';
  const cancelPath =
    cancelRoute === 'POST /runs/{id}/cancel' ? `/runs/${encodeURIComponent(run.id)}/cancel` : `${base}/cancel`;
  // the reason is asked for only where the server keeps it (its OpenAPI document says the cancel's body takes one)
  const takesReason = paths.has(`${cancelRoute} body.reason`);
  const cancel = (reason: string) =>
    act(() => api(cancelPath, { method: 'POST', ...(takesReason && reason ? { body: { reason } } : {}) }));
  const canCancel =
    !ended &&
    (paths.has('POST /runs/{id}/cancel') ||
      (base !== null && paths.has('POST /workflows/{id}/executions/{execution_id}/cancel')));
  const canSignal = !ended && paths.has('POST /runs/{id}/signal');
  const canRetry =
    base !== null && (status === 'failed' || status === 'partial_success') && failed.length > 0 && paths.has(RETRY);
  const canRerun = base !== null && paths.has(RERUN);
  // replay against the running code (docs/replay.md): the answer shows here, nothing about the run changes
  const [replayed, setReplayed] = useState<{ replays: boolean; divergence: string | null } | null>(null);
  const replay = async () => {
    setBusy(true);
    setError(null);
    try {
      setReplayed(await api(`/runs/${encodeURIComponent(run.id)}/replay`, { method: 'POST' }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: Escape anywhere in the group closes the open form (the controls inside are buttons)
    <div class="run-actions" onKeyDown={(e) => e.key === 'Escape' && open !== null && setOpen(null)}>
      <div class="actions">
        {canCancel ? (
          <button type="button" class="danger" disabled={busy} aria-haspopup="dialog" onClick={toggle('cancel')}>
            Cancel run…
          </button>
        ) : null}
        {canRetry ? (
          <button type="button" aria-expanded={open === 'retry'} onClick={toggle('retry')}>
            Retry failed branches…
          </button>
        ) : null}
        {canRerun ? (
          <button type="button" aria-expanded={open === 'rerun'} onClick={toggle('rerun')}>
            Rerun…
          </button>
        ) : null}
        {canSignal ? (
          <button type="button" aria-expanded={open === 'signal'} onClick={toggle('signal')}>
            Signal…
          </button>
        ) : null}
        {paths.has('POST /runs/{id}/replay') ? (
          <button type="button" disabled={busy} onClick={replay}>
            Replay against the running code
          </button>
        ) : null}
      </div>
      {replayed ? (
        <p class="replay-result" role="status">
          {replayed.replays ? 'Replays on the running code' : `Diverges: ${replayed.divergence}`}
        </p>
      ) : null}
      {open === 'signal' && canSignal ? (
        <SignalForm
          busy={busy}
          onSend={(body) => act(() => api(`/runs/${encodeURIComponent(run.id)}/signal`, { method: 'POST', body }))}
        />
      ) : null}
      {open === 'retry' && canRetry ? (
        <RetryForm
          busy={busy}
          failed={failed}
          onRetry={(branches) => act(() => api(`${base}/retry`, { method: 'POST', body: { branches } }))}
        />
      ) : null}
      {open === 'rerun' && canRerun && execution ? (
        <RerunForm
          busy={busy}
          execution={execution}
          onRerun={(body) => act(() => api(`${base}/rerun`, { method: 'POST', body }))}
        />
      ) : null}
      {open === 'cancel' && canCancel ? (
        <CancelDialog
          runId={run.id}
          withReason={takesReason}
          busy={busy}
          error={error}
          onConfirm={cancel}
          onClose={() => setOpen(null)}
        />
      ) : null}
      {open !== 'cancel' ? <ErrorBox error={error} /> : null}
    </div>
  );
}

/** Asks before cancelling (one stray click must not stop a run), with a reason where the server keeps one; a modal <dialog>, no window.confirm. */
function CancelDialog({
  runId,
  withReason,
  busy,
  error,
  onConfirm,
  onClose,
}: {
  runId: string;
  withReason: boolean;
  busy: boolean;
  error: unknown;
  onConfirm: (reason: string) => void;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState('');
  useEffect(() => {
    if (!dialog.current?.open) dialog.current?.showModal();
  }, []);
  return (
    <dialog ref={dialog} aria-labelledby="cancel-title" class="confirm" onClose={onClose}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          onConfirm(reason.trim());
        }}
      >
        <h2 id="cancel-title">Cancel this run?</h2>
        <p>
          <span class="mono">{runId}</span> stops: its running step is told to stop, no new step starts, and the
          compensations of the steps done run. This cannot be undone.
        </p>
        {withReason ? (
          <label>
            Reason (optional){' '}
            <input name="reason" value={reason} maxLength={500} onInput={(e) => setReason(e.currentTarget.value)} />
          </label>
        ) : null}
        <ErrorBox error={error} />
        <div class="actions">
          {/* the dialog opens on it (autofocus, before the reason's input): Enter does not stop the run */}
          {/* biome-ignore lint/a11y/noAutofocus: a modal dialog's safe choice is where focus belongs */}
          <button type="button" autofocus onClick={() => dialog.current?.close()}>
            Keep it running
          </button>
          <button type="submit" class="danger" disabled={busy}>
            Cancel run
          </button>
        </div>
      </form>
    </dialog>
  );
}

function SignalForm({ busy, onSend }: { busy: boolean; onSend: (body: { name: string; payload?: unknown }) => void }) {
  const [name, setName] = useState('');
  const [payload, setPayload] = useState('');
  const [error, setError] = useState<unknown>(null);
  return (
    <form
      class="card action-form"
      aria-label="Send a signal"
      onSubmit={(e) => {
        e.preventDefault();
        setError(null);
        try {
          const value = parseJson(payload, 'payload');
          onSend({ name, ...(value !== undefined ? { payload: value } : {}) });
        } catch (err) {
          setError(err);
        }
      }}
    >
      <label>
        Name <input required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Payload (JSON){' '}
        <textarea rows={3} class="mono" value={payload} onInput={(e) => setPayload(e.currentTarget.value)} />
      </label>
      <ErrorBox error={error} />
      <button type="submit" class="primary" disabled={busy}>
        Send
      </button>
    </form>
  );
}

function RetryForm({
  busy,
  failed,
  onRetry,
}: {
  busy: boolean;
  failed: string[];
  onRetry: (branches: string[]) => void;
}) {
  const [chosen, setChosen] = useState<Set<string>>(new Set(failed));
  return (
    <form
      class="card action-form"
      aria-label="Retry failed branches"
      onSubmit={(e) => {
        e.preventDefault();
        onRetry(failed.filter((b) => chosen.has(b)));
      }}
    >
      <fieldset>
        <legend>Branches to run again (every step that succeeded is reused)</legend>
        {failed.map((b) => (
          <label key={b} class="check">
            <input
              type="checkbox"
              checked={chosen.has(b)}
              onChange={(e) => {
                const next = new Set(chosen);
                if (e.currentTarget.checked) next.add(b);
                else next.delete(b);
                setChosen(next);
              }}
            />{' '}
            <span class="mono">{b}</span>
          </label>
        ))}
      </fieldset>
      <button type="submit" class="primary" disabled={busy || chosen.size === 0}>
        Retry {chosen.size === 1 ? 'branch' : `${chosen.size} branches`}
      </button>
    </form>
  );
}

function RerunForm({
  busy,
  execution,
  onRerun,
}: {
  busy: boolean;
  execution: Execution;
  onRerun: (body: { from_step: string; trigger_data?: unknown }) => void;
}) {
  // from_step is a top-level step; a failed or unfinished one is the usual place to start again
  const top = execution.steps.filter((s) => s.parallel === undefined);
  const [from, setFrom] = useState(top.find((s) => s.status !== 'success')?.step_id ?? top[0]?.step_id ?? '');
  const [trigger, setTrigger] = useState('');
  const [error, setError] = useState<unknown>(null);
  return (
    <form
      class="card action-form"
      aria-label="Rerun from a step"
      onSubmit={(e) => {
        e.preventDefault();
        setError(null);
        try {
          const data = parseJson(trigger, 'trigger_data');
          onRerun({ from_step: from, ...(data !== undefined ? { trigger_data: data } : {}) });
        } catch (err) {
          setError(err);
        }
      }}
    >
      <label>
        From step (the steps before it are reused)
        <select value={from} onChange={(e) => setFrom(e.currentTarget.value)}>
          {top.map((s) => (
            <option key={s.step_id} value={s.step_id}>
              {s.step_id} ({s.status.replace('_', ' ')})
            </option>
          ))}
        </select>
      </label>
      <label>
        New trigger data (JSON, optional){' '}
        <textarea
          rows={3}
          class="mono"
          placeholder={JSON.stringify(execution.trigger_data)}
          value={trigger}
          onInput={(e) => setTrigger(e.currentTarget.value)}
        />
      </label>
      <ErrorBox error={error} />
      <button type="submit" class="primary" disabled={busy || !from}>
        Rerun
      </button>
    </form>
  );
}
