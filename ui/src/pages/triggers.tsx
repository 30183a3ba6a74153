import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Json, Page, RunLink, time, useLoad } from '../common';
import { Confirmed } from './reasoned';
import { Backfill, type Rule, RuleForm, type Schedule, ScheduleForm } from './trigger-forms';

interface Match {
  rule_id: string;
  rule_name: string;
  run_id: string | null;
  kind: string | null;
  error?: string;
}

const target = (t: any) => (t?.workflow ? `workflow ${t.workflow}` : t?.agent ? `agent ${t.agent}` : JSON.stringify(t));

/**
 * Events received with the rules each matched and the runs they started; rules (create, enable, disable, delete) and
 * schedules with their next fire times (create, edit, pause, resume, backfill, delete).
 */
export function TriggersPage() {
  const [editing, setEditing] = useState<Rule | null>(null);
  const [editingSchedule, setEditingSchedule] = useState<Schedule | null>(null);
  const { data, error, reload } = useLoad(async (signal) => {
    const [events, rules, schedules] = await Promise.all([
      api<{ events: any[] }>('/events?limit=50', { signal }),
      api<{ rules: any[] }>('/rules?limit=500', { signal }),
      api<{ schedules: any[] }>('/schedules?limit=500', { signal }),
    ]);
    return { events: events.events ?? [], rules: rules.rules ?? [], schedules: schedules.schedules ?? [] };
  }, []);
  return (
    <Page title="Triggers">
      <ErrorBox error={error} />
      <h2>Events received</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Event</th>
            <th scope="col">Source / type</th>
            <th scope="col">Received</th>
            <th scope="col">Matched rules → runs</th>
          </tr>
        </thead>
        <tbody>
          {(data?.events ?? []).map((e) => (
            <tr key={e.id}>
              <td class="mono">{e.id}</td>
              <td>
                <span class="mono">{e.source}</span> / {e['detail-type']}
              </td>
              <td>
                {time(e.received_at)} {e.routed ? '' : <span class="muted">(not routed yet)</span>}
              </td>
              <td>
                {(e.matches as Match[]).length === 0 ? <span class="muted">none</span> : null}
                <ul class="plain">
                  {(e.matches as Match[]).map((m) => (
                    <li key={m.rule_id}>
                      {m.rule_name} →{' '}
                      {m.run_id ? <RunLink id={m.run_id} /> : <span class="err">{m.error ?? 'no run'}</span>}
                    </li>
                  ))}
                </ul>
              </td>
            </tr>
          ))}
          {data && data.events.length === 0 ? (
            <tr>
              <td colSpan={4} class="empty">
                No events yet (POST /events).
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <h2>Rules</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Rule</th>
            <th scope="col">Pattern</th>
            <th scope="col">Target</th>
            <th scope="col">Enabled</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(data?.rules ?? []).map((r) => (
            <tr key={r.id} data-rule={r.name}>
              <td>
                {r.name}
                <div class="muted mono">{r.id}</div>
              </td>
              <td>
                <Json value={r.pattern} />
              </td>
              <td>{target(r.target)}</td>
              <td>{r.enabled ? 'yes' : 'no'}</td>
              <td class="actions">
                <button
                  type="button"
                  onClick={() =>
                    api(`/rules/${r.id}/${r.enabled ? 'disable' : 'enable'}`, { method: 'POST' }).then(reload, reload)
                  }
                >
                  {r.enabled ? 'Disable' : 'Enable'}
                </button>
                <button type="button" onClick={() => setEditing(r)}>
                  Edit
                </button>
                <Confirmed
                  label="Delete"
                  confirm={`Delete rule ${r.name}`}
                  act={() => api(`/rules/${r.id}`, { method: 'DELETE' })}
                  done={reload}
                />
              </td>
            </tr>
          ))}
          {data && data.rules.length === 0 ? (
            <tr>
              <td colSpan={5} class="empty">
                No rules.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      {editing ? (
        <RuleForm
          key={editing.id}
          rule={editing}
          onSaved={() => {
            setEditing(null);
            reload();
          }}
        />
      ) : (
        <RuleForm onSaved={reload} />
      )}
      <h2>Schedules</h2>
      <table>
        <thead>
          <tr>
            <th scope="col">Schedule</th>
            <th scope="col">Cron</th>
            <th scope="col">Target</th>
            <th scope="col">Next fire times</th>
            <th scope="col">Last</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(data?.schedules ?? []).map((s) => (
            <tr key={s.id} data-schedule={s.name ?? s.id}>
              <td>{s.name ?? <span class="mono">{s.id}</span>}</td>
              <td class="mono">
                {s.cron} <span class="muted">{s.timezone}</span>
              </td>
              <td>{target(s.target)}</td>
              <td>
                {s.paused ? <span data-fact="paused">paused</span> : null}
                <ul class="plain">
                  {(s.next as string[]).map((n) => (
                    <li key={n}>
                      <time dateTime={n}>{time(n)}</time>
                    </li>
                  ))}
                </ul>
              </td>
              <td>
                {s.state?.last_outcome ?? '—'} {s.state?.last_run_id ? <RunLink id={s.state.last_run_id} /> : null}
                <div class="muted">
                  fired {s.state?.fired ?? 0} · skipped {s.state?.skipped ?? 0} · failed {s.state?.failed ?? 0}
                </div>
              </td>
              <td>
                <button
                  type="button"
                  onClick={() =>
                    api(`/schedules/${s.id}/${s.paused ? 'resume' : 'pause'}`, { method: 'POST' }).then(reload, reload)
                  }
                >
                  {s.paused ? 'Resume' : 'Pause'}
                </button>
                <button type="button" onClick={() => setEditingSchedule(s)}>
                  Edit
                </button>
                <Backfill id={s.id} />
                <Confirmed
                  label="Delete"
                  confirm={`Delete schedule ${s.name ?? s.id}`}
                  act={() => api(`/schedules/${s.id}`, { method: 'DELETE' })}
                  done={reload}
                />
              </td>
            </tr>
          ))}
          {data && data.schedules.length === 0 ? (
            <tr>
              <td colSpan={6} class="empty">
                No schedules.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      {editingSchedule ? (
        <ScheduleForm
          key={editingSchedule.id}
          schedule={editingSchedule}
          onSaved={() => {
            setEditingSchedule(null);
            reload();
          }}
        />
      ) : (
        <ScheduleForm onSaved={reload} />
      )}
    </Page>
  );
}
