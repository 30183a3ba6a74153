import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox } from '../common';
import { BY } from './reasoned';

interface BulkAnswer {
  action: string;
  ids: string[];
  skipped: Array<{ id: string; why: string }>;
  dry_run: boolean;
}

/** One bulk action of the operator's API: its path, its button, and the verb of its outcome. */
export interface BulkAction {
  path: '/operator/runs/cancel' | '/operator/runs/retry' | '/operator/tasks/redrive';
  label: string;
  done: string;
  noun: string;
}

const SHOWN_IDS = 20;
const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * Bulk actions by filter, each in two steps: a dry run that counts (and lists) what the filter matches now, then,
 * with a reason, the action on what still matches. Nothing changes before the confirmation.
 *
 * @example <Bulk actions={[CANCEL]} filter={{ status: ['running'] }} describe="running runs" onDone={reload} />
 */
export function Bulk({
  actions,
  filter,
  describe,
  blocked,
  onDone,
}: {
  actions: BulkAction[];
  filter: Record<string, unknown>;
  describe: string;
  /** Why the current filter cannot be acted on in bulk, if it cannot. */
  blocked?: string;
  onDone: () => void;
}) {
  const [preview, setPreview] = useState<{ action: BulkAction; answer: BulkAnswer } | null>(null);
  const [reason, setReason] = useState('');
  const [done, setDone] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const call = (action: BulkAction, dryRun: boolean) =>
    api<BulkAnswer>(action.path, {
      method: 'POST',
      body: { ...filter, dry_run: dryRun, by: BY, reason: dryRun ? 'preview' : reason.trim() },
    });
  const step = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card bulk" aria-label="Bulk actions">
      <p>
        By filter: <strong>{describe}</strong>
      </p>
      {blocked ? <p class="muted">{blocked}</p> : null}
      <div class="actions">
        {actions.map((a) => (
          <button
            key={a.path}
            type="button"
            disabled={busy || !!blocked}
            onClick={() =>
              step(async () => {
                setDone('');
                setPreview({ action: a, answer: await call(a, true) });
              })
            }
          >
            {a.label} matching…
          </button>
        ))}
      </div>
      {preview ? (
        <form
          class="confirm"
          onSubmit={(e) => {
            e.preventDefault();
            step(async () => {
              const answer = await call(preview.action, false);
              setPreview(null);
              setReason('');
              setDone(
                `${preview.action.done} ${plural(answer.ids.length, preview.action.noun)}` +
                  (answer.skipped.length ? ` (${answer.skipped.length} left alone)` : '') +
                  '.',
              );
              onDone();
            });
          }}
        >
          <p data-fact="preview-count">
            {preview.action.label}: {plural(preview.answer.ids.length, preview.action.noun)} match
            {preview.answer.skipped.length ? `, ${preview.answer.skipped.length} would be left alone` : ''}.
          </p>
          {preview.answer.ids.length ? (
            <p class="muted mono">
              {preview.answer.ids.slice(0, SHOWN_IDS).join(' ')}
              {preview.answer.ids.length > SHOWN_IDS ? ` … and ${preview.answer.ids.length - SHOWN_IDS} more` : ''}
            </p>
          ) : null}
          <div class="actions">
            <input
              name="reason"
              aria-label="Reason"
              placeholder="why (journaled)"
              required
              maxLength={2000}
              value={reason}
              onInput={(e) => setReason(e.currentTarget.value)}
            />
            <button type="submit" class="primary" disabled={busy || !reason.trim() || preview.answer.ids.length === 0}>
              {preview.action.label} {plural(preview.answer.ids.length, preview.action.noun)}
            </button>
            <button type="button" onClick={() => setPreview(null)}>
              Back
            </button>
          </div>
        </form>
      ) : null}
      <ErrorBox error={error} />
      <p role="status" class="muted">
        {done}
      </p>
    </section>
  );
}

const CANCEL: BulkAction = { path: '/operator/runs/cancel', label: 'Cancel', done: 'Cancelled', noun: 'run' };
const RETRY: BulkAction = { path: '/operator/runs/retry', label: 'Retry', done: 'Started again', noun: 'run' };
const REDRIVE: BulkAction = { path: '/operator/tasks/redrive', label: 'Redrive', done: 'Redrove', noun: 'dead task' };

/** The runs page's filters (`status`, `workflow`, `from`, `to` of its query) as the operator's run filter. */
export function runFilter(query: URLSearchParams) {
  const status = query.get('status');
  const workflow = query.get('workflow');
  const from = query.get('from');
  const to = query.get('to');
  const filter = {
    ...(status ? { status: [status] } : {}),
    ...(workflow ? { workflow } : {}),
    ...(from ? { created_after: new Date(from).toISOString() } : {}),
    ...(to ? { created_before: new Date(to).toISOString() } : {}),
  };
  const describe = [
    status ? `status ${status}` : 'any status',
    workflow ? `workflow ${workflow}` : '',
    from ? `created after ${from}` : '',
    to ? `created before ${to}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return {
    actions: [CANCEL, RETRY],
    filter,
    describe,
    ...(query.get('kind')
      ? { blocked: 'The kind filter does not apply to bulk actions: clear it to act in bulk.' }
      : {}),
  };
}

/** Redrive dead tasks by queue and by when they died, counted first. */
export function RedriveByFilter({ onDone }: { onDone: () => void }) {
  const [queue, setQueue] = useState('');
  const [after, setAfter] = useState('');
  const [before, setBefore] = useState('');
  const filter = {
    ...(queue.trim() ? { queue: queue.trim() } : {}),
    ...(after ? { dead_after: new Date(after).toISOString() } : {}),
    ...(before ? { dead_before: new Date(before).toISOString() } : {}),
  };
  const describe = [
    queue.trim() ? `queue ${queue.trim()}` : 'every queue',
    after ? `died after ${after}` : '',
    before ? `died before ${before}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return (
    <>
      <div class="filters actions">
        <label>
          Queue
          <input name="queue" value={queue} onInput={(e) => setQueue(e.currentTarget.value)} />
        </label>
        <label>
          Died after
          <input type="datetime-local" value={after} onChange={(e) => setAfter(e.currentTarget.value)} />
        </label>
        <label>
          Died before
          <input type="datetime-local" value={before} onChange={(e) => setBefore(e.currentTarget.value)} />
        </label>
      </div>
      <Bulk actions={[REDRIVE]} filter={filter} describe={describe} onDone={onDone} />
    </>
  );
}
