import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { RunStatus } from '../../src/runtime/read/view.js';
import { ApiError } from './api';
import { href } from './router';

/** The one status vocabulary; older servers said `succeeded`/`ok`/`error`, shown as their new names. */
const ALIASES: Record<string, string> = {
  succeeded: 'success',
  ok: 'success',
  error: 'failed',
  completed: 'success',
  COMPLETED: 'success',
  FAILED: 'failed',
  BUSY: 'running',
  INITIATED: 'pending',
};
/**
 * Every run status, in lifecycle order. The runtime's `RunStatus` is the one list: a status it gains or loses and
 * this record does not is a compile error here (a record must have each key of the union, and no other).
 */
const RUN_STATUS_ORDER: Record<RunStatus, null> = {
  pending: null,
  running: null,
  sleeping: null,
  waiting: null,
  success: null,
  partial_success: null,
  failed: null,
  cancelled: null,
};
export const RUN_STATUSES = Object.keys(RUN_STATUS_ORDER) as RunStatus[];
const TERMINAL = new Set(['success', 'partial_success', 'failed', 'cancelled', 'succeeded']);

export function normalStatus(status: string): string {
  return ALIASES[status] ?? status;
}

export function isTerminal(status: string): boolean {
  return TERMINAL.has(normalStatus(status));
}

/** What the agent ledger's own words (its columns keep them: docs/glossary.md) mean, for their colour. */
const LEDGER_MEANING: Record<string, string> = {
  started: 'running',
  processing: 'running',
  ok: 'success',
  done: 'success',
  error: 'failed',
  timeout: 'timed_out',
  blocked: 'waiting',
  approved: 'success',
  rejected: 'failed',
  expired: 'timed_out',
};

/** A status in the one vocabulary; `as="ledger"` shows an agent ledger column's word as the API gives it, coloured by its meaning. */
export function Status({ status, as }: { status: string; as?: 'ledger' }) {
  if (as === 'ledger') {
    const meaning = LEDGER_MEANING[status] ?? status;
    return (
      <span class={`status status-${meaning}`} data-status={status}>
        {status}
      </span>
    );
  }
  const s = normalStatus(status);
  return (
    <span class={`status status-${s}`} data-status={s}>
      {s.replace('_', ' ')}
    </span>
  );
}

export function Link({
  to,
  children,
  ...rest
}: {
  to: string;
  children: ComponentChildren;
  class?: string;
  title?: string;
  'aria-current'?: 'page' | undefined;
  'data-workflow-id'?: string;
}) {
  return (
    <a href={href(to)} {...rest}>
      {children}
    </a>
  );
}

export function RunLink({ id }: { id: string }) {
  return (
    <Link to={`/runs/${encodeURIComponent(id)}`} class="mono">
      {id}
    </Link>
  );
}

export function time(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}

/** Short: the time of day for today, else the date too; the full time is in `title`. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>—</span>;
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  const text = today
    ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : d.toLocaleString(undefined, { month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });
  return (
    <time dateTime={iso} title={d.toLocaleString()} class="nowrap">
      {text}
    </time>
  );
}

/** A duration in words: '1 minute', '5 minutes', '2 hours'. */
export function per(ms: number): string {
  const units: Array<[number, string]> = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, name] of units)
    if (ms % size === 0 || ms >= size * 10) {
      const n = Math.round(ms / size);
      return n === 1 ? name : `${n} ${name}s`;
    }
  return duration(ms);
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  if (ms < 3600_000) return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
  return `${Math.floor(ms / 3600_000)} h ${Math.round((ms % 3600_000) / 60_000)} m`;
}

/** How far `at` (ms) is from now in words: 'in 4 min', 'in 12 s', '3 min ago'. */
export function fromNow(at: number, now = Date.now()): string {
  const ms = at - now;
  const abs = Math.abs(ms);
  const text =
    abs < 1000
      ? 'now'
      : abs < 60_000
        ? `${Math.round(abs / 1000)} s`
        : abs < 3_600_000
          ? `${Math.round(abs / 60_000)} min`
          : abs < 86_400_000
            ? `${Math.round(abs / 3_600_000)} h`
            : `${Math.round(abs / 86_400_000)} d`;
  if (text === 'now') return text;
  return ms > 0 ? `in ${text}` : `${text} ago`;
}

/** A moment ahead (a wake-up, a deadline) as a local time and how far it is: "14:35:12 (in 4 min)"; re-rendered by the page's clock. */
export function When({ at }: { at: number }) {
  const d = new Date(at);
  const today = new Date().toDateString() === d.toDateString();
  const text = today ? d.toLocaleTimeString() : d.toLocaleString();
  return (
    <time dateTime={d.toISOString()} title={d.toLocaleString()} class="nowrap" data-at={at}>
      {text} ({fromNow(at)})
    </time>
  );
}

/** Re-renders every `ms` while `on`: for text that says how far a moment is. */
export function useClock(ms: number, on: boolean): void {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!on) return;
    const timer = setInterval(() => setTick((t) => t + 1), ms);
    return () => clearInterval(timer);
  }, [ms, on]);
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return '—';
  return `${duration(Date.now() - Date.parse(iso))} ago`;
}

/** JSON, folded under a summary line; opened it shows the whole value, pretty-printed. */
export function Json({ value, label, open = false }: { value: unknown; label?: string; open?: boolean }) {
  const text = value === undefined ? 'undefined' : JSON.stringify(value, null, 2);
  const short = text.length > 80 ? `${text.replace(/\s+/g, ' ').slice(0, 77)}…` : text.replace(/\s+/g, ' ');
  return (
    <details class="json" open={open}>
      <summary>
        {label ? <span class="json-label">{label}</span> : null}
        <code>{short}</code>
      </summary>
      <pre>{text}</pre>
    </details>
  );
}

export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as ApiError;
  return (
    <div class="error" role="alert">
      <strong>{e.code ?? 'error'}</strong>: {e.message ?? String(error)}
      {e.problems?.length ? (
        <ul>
          {e.problems.map((p) => (
            <li key={p.path + p.message}>
              <code>{p.path || '(root)'}</code> {p.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/** Loads with `fn` whenever `deps` change; `reload()` loads again keeping what is shown until it answers. */
export function useLoad<T>(
  fn: (signal: AbortSignal) => Promise<T>,
  deps: unknown[],
): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const previous = useRef<unknown[]>(deps);
  useEffect(() => {
    const changed = deps.some((d, i) => d !== previous.current[i]);
    previous.current = deps;
    const controller = new AbortController();
    setState((s) => ({ data: changed ? undefined : s.data, error: null, loading: true }));
    fn(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: null, loading: false }),
      (error) => !controller.signal.aborted && setState((s) => ({ data: s.data, error, loading: false })),
    );
    return () => controller.abort();
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

/** Calls `fn` at most once per `ms` (the last call always lands). */
export function throttle(fn: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | null = null;
  let pending = false;
  return () => {
    if (timer) {
      pending = true;
      return;
    }
    fn();
    timer = setTimeout(function tick() {
      timer = null;
      if (pending) {
        pending = false;
        fn();
        timer = setTimeout(tick, ms);
      }
    }, ms);
  };
}

export function parseJson(text: string, field: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError(400, 'validation', `${field} is not valid JSON: ${(error as Error).message}`, [
      { path: field, message: 'is not valid JSON' },
    ]);
  }
}

/** The page: its heading, actions, and the tab's title (`tab`, else a string heading: `Runs · runledger`). */
export function Page({
  title,
  tab,
  children,
  actions,
}: {
  title: ComponentChildren;
  tab?: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
}) {
  const name = tab ?? (typeof title === 'string' ? title : null);
  useEffect(() => {
    document.title = name ? `${name} · runledger` : 'runledger';
  }, [name]);
  return (
    <section aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {actions ? <div class="actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}
