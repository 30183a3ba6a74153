import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Json, Link, Page, RunLink, Status, time, useLoad } from '../common';

/* The API's records of GET /notifications and GET /notifications/{id}/deliveries (server/routes/notifications.ts). */
interface Notification {
  id: string;
  name: string;
  url: string;
  events: string[];
  filter: { workflow?: string; queue?: string };
  body: unknown;
  warn_at: number;
  enabled: boolean;
  created_at: string;
}

interface Attempt {
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

interface Delivery {
  id: string;
  event: string;
  run_id: string | null;
  task_id: string | null;
  status: string;
  reason: string | null;
  body: string | null;
  attempts: Attempt[];
  created_at: string;
  deliver_at: string;
  cursor: string;
}

/** The notifications (outbound webhooks) and what each subscribes to. */
export function NotificationsPage() {
  const { data, error } = useLoad((signal) => api<{ notifications: Notification[] }>('/notifications', { signal }), []);
  const list = data?.notifications ?? [];
  return (
    <Page title="Notifications">
      <ErrorBox error={error} />
      <table>
        <thead>
          <tr>
            <th scope="col">Notification</th>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">Filter</th>
            <th scope="col">Enabled</th>
          </tr>
        </thead>
        <tbody>
          {list.map((n) => (
            <tr key={n.id} data-notification={n.id}>
              <td>
                <Link to={`/notifications/${n.id}`}>{n.name}</Link>
                <div class="muted mono">{n.id}</div>
              </td>
              <td class="mono">{n.url}</td>
              <td>{n.events.join(', ')}</td>
              <td>
                {Object.keys(n.filter).length === 0 ? <span class="muted">none</span> : <Json value={n.filter} />}
              </td>
              <td>{n.enabled ? 'yes' : 'no'}</td>
            </tr>
          ))}
          {data && list.length === 0 ? (
            <tr>
              <td colSpan={5} class="empty">
                No notifications (POST /notifications, or runledger notifications create).
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </Page>
  );
}

/** One notification and its deliveries, newest first, each with its attempts. */
export function NotificationPage({ id }: { id: string }) {
  const [before, setBefore] = useState<string | null>(null);
  const { data, error, reload } = useLoad(
    async (signal) => {
      const query = before ? `?before=${encodeURIComponent(before)}` : '';
      const [notification, page] = await Promise.all([
        api<Notification>(`/notifications/${encodeURIComponent(id)}`, { signal }),
        api<{ deliveries: Delivery[]; next: string | null }>(
          `/notifications/${encodeURIComponent(id)}/deliveries${query}`,
          { signal },
        ),
      ]);
      return { notification, page };
    },
    [id, before],
  );
  const [sending, setSending] = useState<unknown>(null);
  const test = async () => {
    try {
      await api(`/notifications/${encodeURIComponent(id)}/test`, { method: 'POST' });
      setSending(null);
    } catch (e) {
      setSending(e);
    }
    reload();
  };
  const n = data?.notification;
  return (
    <Page
      title={n ? `Notification ${n.name}` : 'Notification'}
      actions={
        <button type="button" onClick={test}>
          Send a test event
        </button>
      }
    >
      <ErrorBox error={error ?? sending} />
      {n ? (
        <p>
          <span class="mono">{n.url}</span> · {n.events.join(', ')}
          {n.events.includes('run.timeout_warning') ? ` · warns at ${Math.round(n.warn_at * 100)} %` : ''}
        </p>
      ) : null}
      <h2>Deliveries</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Delivery</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
          </tr>
        </thead>
        <tbody>
          {(data?.page.deliveries ?? []).map((d) => (
            <tr key={d.id} data-delivery={d.id} data-status={d.status}>
              <td>
                <span class="mono">{d.id}</span>
                <div class="muted">{time(d.created_at)}</div>
              </td>
              <td>
                {d.event}
                {d.run_id ? (
                  <div>
                    <RunLink id={d.run_id} />
                  </div>
                ) : null}
              </td>
              <td>
                <Status status={d.status} as="ledger" />
                {d.status === 'scheduled' ? <div class="muted">due {time(d.deliver_at)}</div> : null}
                {d.reason ? <div class="muted">{d.reason}</div> : null}
              </td>
              <td>
                {d.attempts.length === 0 ? <span class="muted">none yet</span> : null}
                <ol class="plain attempts">
                  {d.attempts.map((a) => (
                    <li key={a.attempt} data-attempt={a.attempt}>
                      #{a.attempt} {time(a.at)} — {a.status ?? 'no answer'} ({a.duration_ms} ms)
                      {a.error ? <div class="err">{a.error}</div> : null}
                    </li>
                  ))}
                </ol>
              </td>
            </tr>
          ))}
          {data && data.page.deliveries.length === 0 ? (
            <tr>
              <td colSpan={4} class="empty">
                No deliveries yet.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      {data?.page.next ? (
        <button type="button" onClick={() => setBefore(data.page.next)}>
          Older deliveries
        </button>
      ) : null}
    </Page>
  );
}
