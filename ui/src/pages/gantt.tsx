import type { RunEvent } from '../../../src/client/records.js';
import { duration } from '../common';

/** A run's journaled event as `GET /runs/{id}/events` and its stream answer it. */
export type JournalEvent = RunEvent;

interface Bar {
  kind: string;
  start: number;
  end: number | null;
  outcome: 'running' | 'success' | 'failed' | 'retrying' | 'waiting' | 'timed_out';
  label: string;
  /** A poll's: its requests so far, and what it polls for (its label). */
  requests?: number;
  what?: string;
}

interface Row {
  key: string;
  label: string;
  bars: Bar[];
}

/**
 * The run's calls as rows of bars, from its journal: each step attempt (a failed one followed by
 * its backoff until the retry), sleeps, waits for a signal, polls (their requests counted), child
 * runs, agent nodes and any other `x.started` / `x.completed|failed|timed_out` pair with a `seq`.
 */
export function ganttRows(events: JournalEvent[]): Row[] {
  const rows = new Map<string, Row>();
  const open = new Map<string, Bar>();
  const rowOf = (seq: unknown, name: unknown, kind: string) => {
    const key = String(seq ?? name ?? kind);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { key, label: `${name ?? kind}`, bars: [] }));
    return row;
  };
  for (const e of events) {
    const at = Date.parse(e.timestamp);
    const [kind, phase] = splitType(e.type);
    if (!kind || !phase || e.data?.seq === undefined) continue;
    const row = rowOf(e.data.seq, e.data.name ?? e.data.step_id, kind);
    const id = `${row.key}/${kind}`;
    if (phase === 'attempted') {
      // a poll's request that did not end it: counted on its bar
      const bar = open.get(id);
      if (bar)
        bar.label = `${bar.what}, ${(bar.requests = e.data.attempt ?? (bar.requests ?? 0) + 1)} request${bar.requests === 1 ? '' : 's'} so far`;
      continue;
    }
    if (phase === 'started') {
      const attempt = e.data.attempt;
      const bar: Bar = {
        kind,
        start: at,
        end: null,
        outcome: kind === 'sleep' || kind === 'wait' ? 'waiting' : 'running',
        label: kind === 'step' ? `attempt ${attempt ?? 1}` : kind,
      };
      if (kind === 'poll') bar.label = bar.what = e.data.label ? `poll: ${e.data.label}` : 'poll';
      if (kind === 'sleep' && e.data.until) bar.label = `sleep until ${new Date(e.data.until).toLocaleTimeString()}`;
      if (kind === 'wait') bar.label = `wait for ${e.data.name ?? 'signal'}`;
      // on the row of the step it undoes, after that step's bars
      if (kind === 'compensation') bar.label = `compensation: undo ${e.data.name ?? row.label}`;
      // the backoff before this attempt ends now
      const last = row.bars.at(-1);
      if (last && last.outcome === 'retrying' && last.end === null) last.end = at;
      row.bars.push(bar);
      open.set(id, bar);
    } else {
      const bar = open.get(id);
      if (!bar) continue;
      open.delete(id);
      bar.end = at;
      bar.outcome = phase === 'completed' ? 'success' : phase === 'timed_out' ? 'timed_out' : 'failed';
      if (kind === 'poll') bar.label = `${bar.what}, ${e.data.attempt ?? (bar.requests ?? 0) + 1} requests`;
      if (kind === 'step' && phase === 'failed' && e.data.retryAt) {
        row.bars.push({
          kind: 'backoff',
          start: at,
          end: null,
          outcome: 'retrying',
          label: `retry at ${new Date(e.data.retryAt).toLocaleTimeString()}`,
        });
      }
    }
  }
  return [...rows.values()];
}

function splitType(type: string): [string, string] | [] {
  const dot = type.lastIndexOf('.');
  if (dot < 0) return [];
  const kind = type.slice(0, dot);
  const phase = type.slice(dot + 1);
  if (kind === 'run') return [];
  if (!['started', 'attempted', 'completed', 'failed', 'timed_out'].includes(phase)) return [];
  return [kind, phase];
}

const LABEL_W = 180;
const WIDTH = 1000;
const ROW_H = 24;

export function Gantt({ events, ended }: { events: JournalEvent[]; ended: boolean }) {
  const now = Date.now();
  const rows = ganttRows(events);
  if (rows.length === 0) return <p class="muted">No steps yet.</p>;
  const first = Date.parse(events[0]!.timestamp);
  const lastEvent = Date.parse(events.at(-1)!.timestamp);
  const end = ended ? lastEvent : Math.max(now, lastEvent);
  const span = Math.max(1, end - first);
  const x = (t: number) => LABEL_W + ((t - first) / span) * (WIDTH - LABEL_W - 10);
  const height = rows.length * ROW_H + 24;
  const compensated = rows.some((r) => r.bars.some((b) => b.kind === 'compensation'));
  return (
    <figure class="gantt">
      <svg
        viewBox={`0 0 ${WIDTH} ${height}`}
        role="img"
        aria-labelledby="gantt-title"
        preserveAspectRatio="xMinYMin meet"
      >
        <title id="gantt-title">{`Timeline of ${rows.length} calls over ${duration(span)}`}</title>
        {[0, 0.25, 0.5, 0.75, 1].map((f) => (
          <g key={f}>
            <line x1={x(first + f * span)} x2={x(first + f * span)} y1={0} y2={height - 18} class="grid" />
            <text
              x={x(first + f * span)}
              y={height - 4}
              class="axis"
              text-anchor={f === 0 ? 'start' : f === 1 ? 'end' : 'middle'}
            >
              +{duration(f * span)}
            </text>
          </g>
        ))}
        {rows.map((row, i) => (
          <g key={row.key} transform={`translate(0 ${i * ROW_H})`}>
            <text x={4} y={ROW_H / 2 + 4} class="row-label">
              {row.label.length > 24 ? `${row.label.slice(0, 23)}…` : row.label}
            </text>
            {row.bars.map((bar, j) => {
              const to = bar.end ?? (ended ? lastEvent : now);
              const w = Math.max(2, x(to) - x(bar.start));
              const title = `${row.label}: ${bar.label} — ${bar.outcome}, ${duration(to - bar.start)}${bar.end === null ? ' so far' : ''}`;
              // a compensation is named on its bar (the row names the step it undoes), beside it when the bar is too short
              return (
                <g key={j}>
                  <rect
                    x={x(bar.start)}
                    y={4}
                    width={w}
                    height={ROW_H - 8}
                    rx={2}
                    class={`bar bar-${bar.kind} bar-${bar.outcome}`}
                  >
                    <title>{title}</title>
                  </rect>
                  {bar.kind === 'compensation' ? (
                    <text
                      x={w >= 50 ? x(bar.start) + 4 : x(bar.start) + w + 4}
                      y={ROW_H / 2 + 4}
                      class={w >= 50 ? 'bar-text on-bar' : 'bar-text'}
                    >
                      {bar.outcome === 'failed' ? 'undo failed' : 'undo'}
                    </text>
                  ) : null}
                </g>
              );
            })}
          </g>
        ))}
      </svg>
      <figcaption class="legend">
        <span class="key key-success">step succeeded</span> <span class="key key-failed">failed</span>{' '}
        <span class="key key-retrying">backoff before a retry</span> <span class="key key-poll">poll</span>{' '}
        <span class="key key-timed_out">timed out</span> <span class="key key-sleep">sleep</span>{' '}
        <span class="key key-wait">wait for a signal</span> <span class="key key-child">child run</span>{' '}
        <span class="key key-running">running</span>
        {compensated ? (
          <>
            {' '}
            <span class="key key-compensation">compensation (undo)</span>
          </>
        ) : null}
      </figcaption>
    </figure>
  );
}
