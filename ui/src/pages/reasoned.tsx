import { useState } from 'preact/hooks';
import { ErrorBox } from '../common';

/** Who the dashboard's operator actions are journaled as (the API's `by`). */
export const BY = 'dashboard';

/**
 * A button that opens a small form asking why (the journal keeps who and why of every operator action), then acts:
 * nothing happens before the second, named click.
 *
 * @example <Reasoned label="Pause" confirm="Pause queue mail" act={(reason) => pause('queue', 'mail', reason)} />
 */
export function Reasoned({
  label,
  confirm,
  act,
  disabled = false,
}: {
  label: string;
  confirm: string;
  act: (reason: string) => Promise<unknown>;
  disabled?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (!open)
    return (
      <button type="button" disabled={disabled} onClick={() => setOpen(true)}>
        {label}
      </button>
    );
  return (
    <form
      class="actions reasoned"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          await act(reason.trim());
          setOpen(false);
          setReason('');
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <input
        name="reason"
        aria-label="Reason"
        placeholder="why (journaled)"
        required
        maxLength={2000}
        value={reason}
        onInput={(e) => setReason(e.currentTarget.value)}
      />
      <button type="submit" class="primary" disabled={busy || !reason.trim()}>
        {confirm}
      </button>
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
      <ErrorBox error={error} />
    </form>
  );
}

/**
 * A button that acts on its second, named click (a delete that cannot be undone), then calls `done`.
 *
 * @example <Confirmed label="Delete" confirm="Delete rule signup" act={() => api('/rules/rule_…', { method: 'DELETE' })} done={reload} />
 */
export function Confirmed({
  label,
  confirm,
  act,
  done,
}: {
  label: string;
  confirm: string;
  act: () => Promise<unknown>;
  done: () => void;
}) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (!asking)
    return (
      <button type="button" onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  return (
    <span class="actions">
      <button
        type="button"
        class="danger"
        onClick={async () => {
          setError(null);
          try {
            await act();
            setAsking(false);
            done();
          } catch (e) {
            setError(e);
          }
        }}
      >
        {confirm}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Keep
      </button>
      <ErrorBox error={error} />
    </span>
  );
}
