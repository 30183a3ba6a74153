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
