import type { DeadTask } from '../../../src/client/records.js';
import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, Json, Page, time, useLoad } from '../common';
import { RedriveByFilter } from './bulk';

interface Parked {
  subscription: string;
  position: number;
  status: string;
  attempts: number;
  error: string;
  stream_id: string;
  type: string;
  data: unknown;
  parked_at: string;
}

async function load(signal: AbortSignal) {
  const [dead, subs] = await Promise.all([
    api<{ tasks: DeadTask[] }>('/dlq?limit=200', { signal }),
    api<{ subscriptions: Array<{ name: string; parked: number; blocked_reason: string | null }> }>('/subscriptions', {
      signal,
    }).catch(() => ({ subscriptions: [] })),
  ]);
  const parked: Parked[] = [];
  for (const s of subs.subscriptions) {
    const page = await api<{ parked: Omit<Parked, 'subscription'>[] }>(
      `/subscriptions/${encodeURIComponent(s.name)}/parked`,
      { signal },
    );
    parked.push(...page.parked.map((p) => ({ ...p, subscription: s.name })));
  }
  return { dead: dead.tasks, parked, subscriptions: subs.subscriptions };
}

/** The task's attempts and errors, fetched when opened. */
function History({ id }: { id: string }) {
  const [events, setEvents] = useState<Array<{ version: number; type: string; timestamp: string; data: any }> | null>(
    null,
  );
  const [error, setError] = useState<unknown>(null);
  return (
    <details
      class="json"
      onToggle={(e) => {
        if ((e.currentTarget as HTMLDetailsElement).open && !events)
          api(`/tasks/${encodeURIComponent(id)}/history`).then((r) => setEvents(r.events), setError);
      }}
    >
      <summary>
        <span class="json-label">history</span>
      </summary>
      <ErrorBox error={error} />
      <ol class="journal">
        {(events ?? []).map((e) => (
          <li key={e.version}>
            <span class="mono">{e.type}</span> <span class="muted">{time(e.timestamp)}</span>
            {e.data?.error ? <div class="err">{e.data.error}</div> : null}
            {e.data?.reason ? <div class="muted">{e.data.reason}</div> : null}
          </li>
        ))}
      </ol>
    </details>
  );
}

/** Dead tasks (redrive one or many) and the events subscriptions parked (deliver again, one or many). */
export function DeadPage() {
  const { data, error, reload } = useLoad(load, []);
  const [chosen, setChosen] = useState<Set<string>>(new Set());
  const [chosenParked, setChosenParked] = useState<Set<string>>(new Set());
  const [actionError, setActionError] = useState<unknown>(null);
  const [done, setDone] = useState('');
  const toggle = (set: Set<string>, key: string, update: (s: Set<string>) => void) => {
    const next = new Set(set);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    update(next);
  };
  const redrive = async (ids: string[]) => {
    setActionError(null);
    try {
      for (const id of ids) await api(`/dlq/${encodeURIComponent(id)}/redrive`, { method: 'POST' });
      setDone(`Redrove ${ids.length} task${ids.length === 1 ? '' : 's'}.`);
      setChosen(new Set());
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  const retry = async (keys: string[]) => {
    setActionError(null);
    try {
      for (const key of keys) {
        const [sub, position] = [key.slice(0, key.lastIndexOf('#')), key.slice(key.lastIndexOf('#') + 1)];
        await api(`/subscriptions/${encodeURIComponent(sub)}/parked/${position}/retry`, { method: 'POST' });
      }
      setDone(`Sent ${keys.length} parked event${keys.length === 1 ? '' : 's'} again.`);
      setChosenParked(new Set());
      reload();
    } catch (e) {
      setActionError(e);
    }
  };
  const dead = data?.dead ?? [];
  const parked = (data?.parked ?? []).filter((p) => p.status === 'parked' || p.status === 'retry');
  return (
    <Page title="Dead letters">
      <ErrorBox error={error ?? actionError} />
      <p role="status" class="muted">
        {done}
      </p>
      <h2>Dead tasks</h2>
      <RedriveByFilter onDone={reload} />
      <div class="actions">
        <button type="button" disabled={chosen.size === 0} onClick={() => redrive([...chosen])}>
          Redrive selected ({chosen.size})
        </button>
        <button type="button" disabled={dead.length === 0} onClick={() => redrive(dead.map((d) => d.id))}>
          Redrive all
        </button>
      </div>
      <table class="dead">
        <thead>
          <tr>
            <th scope="col">
              <span class="sr-only">Select</span>
            </th>
            <th scope="col">Task</th>
            <th scope="col">Queue</th>
            <th scope="col">Attempts</th>
            <th scope="col">Last error</th>
            <th scope="col">Died</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {dead.map((t) => (
            <tr key={t.id} data-task={t.id}>
              <td>
                <input
                  type="checkbox"
                  aria-label={`select ${t.id}`}
                  checked={chosen.has(t.id)}
                  onChange={() => toggle(chosen, t.id, setChosen)}
                />
              </td>
              <td class="mono">
                {t.id}
                <Json value={t.payload} label="payload" />
                <History id={t.id} />
              </td>
              <td class="mono">{t.queue}</td>
              <td>
                {t.attempts}/{t.max_attempts}
              </td>
              <td class="err">{t.last_error}</td>
              <td>{time(t.updated_at)}</td>
              <td>
                <button type="button" onClick={() => redrive([t.id])}>
                  Redrive
                </button>
              </td>
            </tr>
          ))}
          {data && dead.length === 0 ? (
            <tr>
              <td colSpan={7} class="empty">
                No dead tasks.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <h2>Parked events</h2>
      {data?.subscriptions
        .filter((s) => s.blocked_reason)
        .map((s) => (
          <p key={s.name} class="error">
            Subscription <code>{s.name}</code> is blocked: {s.blocked_reason}
          </p>
        ))}
      <div class="actions">
        <button type="button" disabled={chosenParked.size === 0} onClick={() => retry([...chosenParked])}>
          Deliver selected again ({chosenParked.size})
        </button>
      </div>
      <table class="parked">
        <thead>
          <tr>
            <th scope="col">
              <span class="sr-only">Select</span>
            </th>
            <th scope="col">Subscription</th>
            <th scope="col">Event</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Reason</th>
            <th scope="col">Parked</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {parked.map((p) => {
            const key = `${p.subscription}#${p.position}`;
            return (
              <tr key={key}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`select ${key}`}
                    checked={chosenParked.has(key)}
                    onChange={() => toggle(chosenParked, key, setChosenParked)}
                  />
                </td>
                <td class="mono">{p.subscription}</td>
                <td>
                  <span class="mono">{p.type}</span>{' '}
                  <span class="muted">
                    {p.stream_id} @{p.position}
                  </span>
                  <Json value={p.data} label="data" />
                </td>
                <td>{p.status}</td>
                <td>{p.attempts}</td>
                <td class="err">{p.error}</td>
                <td>{time(p.parked_at)}</td>
                <td>
                  <button type="button" onClick={() => retry([key])}>
                    Deliver again
                  </button>
                </td>
              </tr>
            );
          })}
          {data && parked.length === 0 ? (
            <tr>
              <td colSpan={8} class="empty">
                No parked events.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
    </Page>
  );
}
