import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Page, Time, useLoad } from '../common';

/*
 * The audit trail (GET /audit): every privileged request the server answered, refused ones too — who (the API key),
 * what (method and route, the id acted on), from where and with which status — newest first, filtered by actor, route
 * and status, a page at a time ("Older" follows next_cursor).
 */

interface AuditEntry {
  seq: number;
  at: string;
  actor: string | null;
  issued_to: string | null;
  method: string;
  route: string;
  target: string | null;
  address: string | null;
  outcome: number;
  detail: string | null;
}

interface Filters {
  actor: string;
  route: string;
  outcome: string;
}

const PAGE = 50;

function query(filters: Filters, cursor: string | null): string {
  const q = new URLSearchParams({ limit: String(PAGE) });
  for (const [name, value] of Object.entries(filters)) if (value.trim()) q.set(name, value.trim());
  if (cursor) q.set('cursor', cursor);
  return q.toString();
}

export function AuditPage() {
  const [draft, setDraft] = useState<Filters>({ actor: '', route: '', outcome: '' });
  const [filters, setFilters] = useState<Filters>(draft);
  // the cursors of the pages before this one: "Newer" goes back one
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const cursor = cursors.at(-1) ?? null;
  const { data, error, reload } = useLoad(
    (signal) =>
      api<{ entries: AuditEntry[]; next_cursor: string | null }>(`/audit?${query(filters, cursor)}`, { signal }),
    [filters, cursor],
  );
  const field = (name: keyof Filters, label: string, placeholder: string) => (
    <label>
      {label}{' '}
      <input
        name={name}
        value={draft[name]}
        placeholder={placeholder}
        onInput={(e) => setDraft({ ...draft, [name]: e.currentTarget.value })}
      />
    </label>
  );
  return (
    <Page
      title="Audit trail"
      actions={
        <button type="button" onClick={reload}>
          Refresh
        </button>
      }
    >
      <p class="muted">
        Every request that may change something, refused ones too. With API keys, the actor is the key that made it.
      </p>
      <form
        class="filters"
        aria-label="Filter the audit trail"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters(draft);
          setCursors([null]);
        }}
      >
        {field('actor', 'Actor', 'bootstrap')}
        {field('route', 'Route', '/runs/{id}/cancel')}
        {field('outcome', 'Status', '403')}
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={error} />
      {data && data.entries.length === 0 ? <p class="muted">No audited requests.</p> : null}
      {data && data.entries.length > 0 ? (
        <table class="audit">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Actor</th>
              <th scope="col">Request</th>
              <th scope="col">Target</th>
              <th scope="col">From</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {data.entries.map((e) => (
              <tr key={e.seq} data-outcome={e.outcome}>
                <td>
                  <Time iso={e.at} />
                </td>
                <td>
                  {e.actor ?? <span class="muted">none</span>}
                  {e.issued_to ? <span class="muted"> ({e.issued_to})</span> : null}
                </td>
                <td class="mono">
                  {e.method} {e.route}
                </td>
                <td class="mono">{e.target ?? '—'}</td>
                <td class="mono">{e.address ?? '—'}</td>
                <td>
                  <span class={e.outcome >= 400 ? 'status status-failed' : 'status status-success'}>{e.outcome}</span>
                  {e.detail ? <span class="muted"> {e.detail}</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <div class="actions">
        {cursors.length > 1 ? (
          <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
            Newer
          </button>
        ) : null}
        {data?.next_cursor ? (
          <button type="button" onClick={() => setCursors([...cursors, data.next_cursor])}>
            Older
          </button>
        ) : null}
      </div>
    </Page>
  );
}
