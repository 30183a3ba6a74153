import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorBox, parseJson, time } from '../common';

interface Matched {
  id: string;
  source: string;
  'detail-type': string;
  time: string;
}

const RULE_PATTERN = JSON.stringify({ source: ['shop'], 'detail-type': ['order.placed'] }, null, 2);

/** A target as the API takes it, from the form's kind and name. */
const target = (kind: string, name: string) => ({ [kind]: name.trim() });

function TargetFields({
  kind,
  name,
  setKind,
  setName,
}: {
  kind: string;
  name: string;
  setKind: (k: string) => void;
  setName: (n: string) => void;
}) {
  return (
    <>
      <label>
        Target
        <select name="target_kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
          <option value="workflow">workflow</option>
          <option value="agent">agent</option>
        </select>
      </label>
      <label>
        Target name
        <input name="target_name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
    </>
  );
}

/** A rule as the API answers it: what the edit form starts from. */
export interface Rule {
  id: string;
  name: string;
  description?: string;
  pattern: Record<string, unknown>;
  target: { workflow?: string; agent?: string };
  input: unknown;
}

/** A form to create a rule, or edit `rule`, with its pattern tried on the newest events before it is saved. */
export function RuleForm({ rule, onSaved }: { rule?: Rule | null; onSaved: () => void }) {
  const [name, setName] = useState(rule?.name ?? '');
  const [pattern, setPattern] = useState(rule ? JSON.stringify(rule.pattern, null, 2) : RULE_PATTERN);
  const [kind, setKind] = useState(rule?.target.agent ? 'agent' : 'workflow');
  const [targetName, setTargetName] = useState(rule?.target.agent ?? rule?.target.workflow ?? '');
  const [preview, setPreview] = useState<{ tried: number; matched: Matched[] } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const attempt = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    }
  };
  const heading = rule ? `edit-rule-${rule.id}` : 'new-rule';
  return (
    <form
      class="card rule-form"
      aria-labelledby={heading}
      onSubmit={(e) => {
        e.preventDefault();
        attempt(async () => {
          const body = {
            name: name.trim(),
            ...(rule?.description === undefined ? {} : { description: rule.description }),
            pattern: parseJson(pattern, 'pattern'),
            target: target(kind, targetName),
            ...(rule ? { input: rule.input } : {}),
          };
          await api(rule ? `/rules/${rule.id}` : '/rules', { method: rule ? 'PUT' : 'POST', body });
          setName('');
          setPreview(null);
          onSaved();
        });
      }}
    >
      <h3 id={heading}>{rule ? `Edit rule ${rule.name}` : 'New rule'}</h3>
      <label>
        Name
        <input name="name" required readOnly={!!rule} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Pattern (JSON)
        <textarea
          name="pattern"
          class="mono"
          rows={5}
          value={pattern}
          onInput={(e) => {
            setPattern(e.currentTarget.value);
            setPreview(null);
          }}
        />
      </label>
      <TargetFields kind={kind} name={targetName} setKind={setKind} setName={setTargetName} />
      <div class="actions">
        <button
          type="button"
          onClick={() =>
            attempt(async () =>
              setPreview(
                await api('/rules/preview', { method: 'POST', body: { pattern: parseJson(pattern, 'pattern') } }),
              ),
            )
          }
        >
          Try on recent events
        </button>
        <button type="submit" class="primary">
          {rule ? 'Save rule' : 'Create rule'}
        </button>
        {rule ? (
          <button type="button" onClick={onSaved}>
            Close
          </button>
        ) : null}
      </div>
      <ErrorBox error={error} />
      {preview ? (
        <div class="preview" data-fact="pattern-preview">
          <p>
            Matches {preview.matched.length} of the {preview.tried} newest events.
          </p>
          <ul class="plain">
            {preview.matched.map((m) => (
              <li key={m.id} data-event={m.id}>
                <span class="mono">{m.id}</span> {m.source} / {m['detail-type']}{' '}
                <span class="muted">{time(m.time)}</span>
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </form>
  );
}

/** A schedule as the API answers it: what the edit form starts from (its overlap and catch-up are kept). */
export interface Schedule {
  id: string;
  name: string | null;
  cron: string;
  timezone: string;
  target: { workflow?: string; agent?: string };
  input: unknown;
  overlap: string;
  catch_up: string;
}

/** A form to create a schedule, or edit `schedule` (same id), with its cron's next ten slots shown before it is saved. */
export function ScheduleForm({ schedule, onSaved }: { schedule?: Schedule | null; onSaved: () => void }) {
  const [name, setName] = useState(schedule?.name ?? '');
  const [cron, setCron] = useState(schedule?.cron ?? '0 9 * * 1-5');
  const [timezone, setTimezone] = useState(schedule?.timezone ?? 'UTC');
  const [kind, setKind] = useState(schedule?.target.agent ? 'agent' : 'workflow');
  const [targetName, setTargetName] = useState(schedule?.target.agent ?? schedule?.target.workflow ?? '');
  const [input, setInput] = useState(schedule ? JSON.stringify(schedule.input) : '');
  const [next, setNext] = useState<string[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const attempt = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    }
  };
  const edited = (set: (v: string) => void) => (e: { currentTarget: HTMLInputElement }) => {
    set(e.currentTarget.value);
    setNext(null);
  };
  const heading = schedule ? `edit-schedule-${schedule.id}` : 'new-schedule';
  return (
    <form
      class="card schedule-form"
      aria-labelledby={heading}
      onSubmit={(e) => {
        e.preventDefault();
        attempt(async () => {
          const body = {
            ...(name.trim() ? { name: name.trim() } : {}),
            cron: cron.trim(),
            timezone: timezone.trim(),
            target: target(kind, targetName),
            ...(input.trim() ? { input: parseJson(input, 'input') } : {}),
            ...(schedule ? { overlap: schedule.overlap, catch_up: schedule.catch_up } : {}),
          };
          await api(schedule ? `/schedules/${schedule.id}` : '/schedules', {
            method: schedule ? 'PUT' : 'POST',
            body,
          });
          setName('');
          setNext(null);
          onSaved();
        });
      }}
    >
      <h3 id={heading}>{schedule ? `Edit schedule ${schedule.name ?? schedule.id}` : 'New schedule'}</h3>
      <label>
        Name (optional)
        <input name="name" value={name} onInput={edited(setName)} />
      </label>
      <label>
        Cron
        <input name="cron" class="mono" required value={cron} onInput={edited(setCron)} />
      </label>
      <label>
        Time zone
        <input name="timezone" required value={timezone} onInput={edited(setTimezone)} />
      </label>
      <TargetFields kind={kind} name={targetName} setKind={setKind} setName={setTargetName} />
      <label>
        Input (JSON mapping of the tick; empty: the whole tick)
        <textarea name="input" class="mono" rows={2} value={input} onInput={(e) => setInput(e.currentTarget.value)} />
      </label>
      <div class="actions">
        <button
          type="button"
          onClick={() =>
            attempt(async () => {
              const answer = await api<{ next: string[] }>('/schedules/preview', {
                method: 'POST',
                body: { cron: cron.trim(), timezone: timezone.trim() },
              });
              setNext(answer.next);
            })
          }
        >
          Show the next ten times
        </button>
        <button type="submit" class="primary">
          {schedule ? 'Save schedule' : 'Create schedule'}
        </button>
        {schedule ? (
          <button type="button" onClick={onSaved}>
            Close
          </button>
        ) : null}
      </div>
      <ErrorBox error={error} />
      {next ? (
        <ol class="preview" data-fact="schedule-preview">
          {next.map((n) => (
            <li key={n}>
              <time dateTime={n}>{time(n)}</time>
            </li>
          ))}
        </ol>
      ) : null}
    </form>
  );
}

/** Backfill a schedule over a past window (the browser's local time): a run per slot, the slots that had one keep it. */
export function Backfill({ id }: { id: string }) {
  const [open, setOpen] = useState(false);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [runs, setRuns] = useState<Array<{ slot: string; run_id: string }> | null>(null);
  const [error, setError] = useState<unknown>(null);
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)}>
        Backfill…
      </button>
    );
  return (
    <form
      class="backfill"
      onSubmit={async (e) => {
        e.preventDefault();
        setError(null);
        try {
          const body = { from: new Date(from).toISOString(), to: new Date(to).toISOString() };
          setRuns((await api(`/schedules/${id}/backfill`, { method: 'POST', body })).runs);
        } catch (err) {
          setError(err);
        }
      }}
    >
      <label>
        From
        <input
          type="datetime-local"
          name="from"
          required
          value={from}
          onInput={(e) => setFrom(e.currentTarget.value)}
        />
      </label>
      <label>
        To
        <input type="datetime-local" name="to" required value={to} onInput={(e) => setTo(e.currentTarget.value)} />
      </label>
      <div class="actions">
        <button type="submit" class="primary">
          Backfill the window
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Close
        </button>
      </div>
      <ErrorBox error={error} />
      {runs ? (
        <p role="status" data-fact="backfilled">
          {runs.length} slot{runs.length === 1 ? '' : 's'}, each with its run.
        </p>
      ) : null}
    </form>
  );
}
