import type { FlowRecord } from '../../../src/client/flow.js';
import { api } from '../api';
import { ErrorBox, Page, per, RunLink, Time, useLoad } from '../common';

/*
 * The limits in force (GET /flow): each concurrency key with runs in or waiting — how many of its slots are in use,
 * who waits, since when — and the named rate limits steps take. A waiting run links to its page.
 */

const load = (signal: AbortSignal) => api<FlowRecord>('/flow', { signal });

/** The runs of a key, each a link to its run page; the first few, then how many more. */
function Runs({ ids }: { ids: string[] }) {
  if (ids.length === 0) return <span class="muted">—</span>;
  const shown = ids.slice(0, 10);
  return (
    <span>
      {shown.map((id, i) => (
        <span key={id}>
          {i > 0 ? ', ' : null}
          <RunLink id={id} />
        </span>
      ))}
      {ids.length > shown.length ? <span class="muted"> and {ids.length - shown.length} more</span> : null}
    </span>
  );
}

export function LimitsPage() {
  const { data, error, reload } = useLoad(load, []);
  return (
    <Page
      title="Limits"
      actions={
        <button type="button" onClick={reload}>
          Refresh
        </button>
      }
    >
      <ErrorBox error={error} />
      <h2>Concurrency</h2>
      {data && data.concurrency.length === 0 ? <p class="muted">No concurrency key has a run in or waiting.</p> : null}
      {data && data.concurrency.length > 0 ? (
        <table class="limits">
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">In use</th>
              <th scope="col">Waiting</th>
              <th scope="col">Oldest waiting since</th>
              <th scope="col">Running</th>
              <th scope="col">Waiting runs</th>
            </tr>
          </thead>
          <tbody>
            {data.concurrency.map((k) => (
              <tr key={k.key} data-key={k.key}>
                <td class="mono">{k.key}</td>
                <td>
                  {k.in_use} of {k.limit} in use
                </td>
                <td>{k.waiting}</td>
                <td>{k.oldest_waiting_since ? <Time iso={k.oldest_waiting_since} /> : '—'}</td>
                <td>
                  <Runs ids={k.active_runs} />
                </td>
                <td>
                  <Runs ids={k.waiting_runs} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {data?.truncated ? <p class="muted">More keys are in use than shown.</p> : null}
      <h2>Rate limits</h2>
      {data && data.rate_limits.length === 0 ? <p class="muted">No named rate limits.</p> : null}
      {data && data.rate_limits.length > 0 ? (
        <table class="rate-limits">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Limit</th>
              <th scope="col">Key</th>
            </tr>
          </thead>
          <tbody>
            {data.rate_limits.map((l) => (
              <tr key={l.name}>
                <td class="mono">{l.name}</td>
                <td>
                  {l.limit} per {per(l.period_ms)}
                </td>
                <td class="mono">{l.key ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </Page>
  );
}
