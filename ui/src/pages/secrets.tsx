import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, time, useLoad } from '../common';
import { Confirmed } from './reasoned';

interface Secret {
  name: string;
  created_at: string;
  updated_at: string;
}

/**
 * The secrets stored workflows read as `{{secrets.NAME}}`: names and dates only. A value goes in (store, or replace
 * by name) and is never shown again: the API has no way to read it back.
 */
export function Secrets() {
  const { data, error, reload } = useLoad((signal) => api<{ secrets: Secret[] }>('/secrets', { signal }), []);
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [saveError, setSaveError] = useState<unknown>(null);
  const [done, setDone] = useState('');
  const secrets = data?.secrets ?? [];
  const replacing = secrets.some((s) => s.name === name.trim());
  return (
    <>
      <h2>Secrets</h2>
      <ErrorBox error={error} />
      <table class="secrets">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Created</th>
            <th scope="col">Updated</th>
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {secrets.map((s) => (
            <tr key={s.name} data-secret={s.name}>
              <td class="mono">{s.name}</td>
              <td>
                <time dateTime={s.created_at}>{time(s.created_at)}</time>
              </td>
              <td>
                <time dateTime={s.updated_at}>{time(s.updated_at)}</time>
              </td>
              <td>
                <Confirmed
                  label="Delete"
                  confirm={`Delete secret ${s.name}`}
                  act={() => api(`/secrets/${encodeURIComponent(s.name)}`, { method: 'DELETE' })}
                  done={reload}
                />
              </td>
            </tr>
          ))}
          {data && secrets.length === 0 ? (
            <tr>
              <td colSpan={4} class="empty">
                No secrets.
              </td>
            </tr>
          ) : null}
        </tbody>
      </table>
      <form
        class="card secret-form"
        aria-labelledby="store-secret"
        onSubmit={async (e) => {
          e.preventDefault();
          setSaveError(null);
          try {
            const saved = await api<Secret>('/secrets', { method: 'POST', body: { name: name.trim(), value } });
            setDone(`${replacing ? 'Replaced' : 'Stored'} ${saved.name}; its value is not shown again.`);
            setName('');
            setValue('');
            reload();
          } catch (err) {
            setSaveError(err);
          }
        }}
      >
        <h3 id="store-secret">Store a secret</h3>
        <label>
          Secret name
          <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Value (write-only)
          <input
            name="value"
            type="password"
            autocomplete="off"
            required
            value={value}
            onInput={(e) => setValue(e.currentTarget.value)}
          />
        </label>
        <button type="submit" class="primary">
          {replacing ? 'Replace the value' : 'Store'}
        </button>
        <ErrorBox error={saveError} />
        <p role="status" class="muted">
          {done}
        </p>
      </form>
    </>
  );
}
