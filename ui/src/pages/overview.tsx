import { useEffect } from 'preact/hooks';
import { api } from '../api';
import { duration, ErrorBox, normalStatus, Page, per, time, useLoad } from '../common';
import { navigate, useLocation } from '../router';

interface Overview {
  now: string;
  window_ms: number;
  bucket_ms: number;
  runs_scanned: number;
  runs_ended: Array<{ at: string; by_status: Record<string, number> }>;
  runs_in_flight: Record<string, number>;
  step_latency: { count: number; p50_ms: number | null; p99_ms: number | null };
  queue: Record<string, any> & {
    oldest_ready: { id: string; queue: string; created_at: string; run_at: string } | null;
  };
  parked: { now: number; buckets: Array<{ at: string; count: number }> };
}

const OUTCOMES = ['success', 'partial_success', 'failed', 'cancelled'];
const WINDOWS = ['15m', '1h', '6h', '24h'];

/** Stacked bars, one per bucket; a table with the same numbers follows for screen readers. */
function Bars({
  buckets,
  series,
  title,
  from,
  to,
}: {
  buckets: Array<Record<string, number>>;
  series: string[];
  title: string;
  from: string;
  to: string;
}) {
  const max = Math.max(1, ...buckets.map((b) => series.reduce((n, s) => n + (b[s] ?? 0), 0)));
  const w = 600 / buckets.length;
  return (
    <svg viewBox="0 0 600 126" class="chart" role="img" aria-label={title}>
      <line x1="0" x2="600" y1="110" y2="110" class="grid" />
      <text x="2" y="122" class="axis">
        {new Date(from).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}
      </text>
      <text x="598" y="122" class="axis" text-anchor="end">
        {new Date(to).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}
      </text>
      <text x="2" y="10" class="axis">
        {max}
      </text>
      {buckets.map((b, i) => {
        let y = 110;
        return series.map((s) => {
          const h = ((b[s] ?? 0) / max) * 100;
          y -= h;
          return h > 0 ? (
            <rect key={`${i}-${s}`} x={i * w + 0.5} y={y} width={Math.max(1, w - 1)} height={h} class={`fill-${s}`}>
              <title>{`${s}: ${b[s]}`}</title>
            </rect>
          ) : null;
        });
      })}
    </svg>
  );
}

export function OverviewPage() {
  const loc = useLocation();
  const window = loc.query.get('window') ?? '1h';
  const { data, error, reload } = useLoad(
    (signal) => api<Overview>(`/overview?window=${window}`, { signal }),
    [window],
  );
  useEffect(() => {
    const timer = setInterval(reload, 5000);
    return () => clearInterval(timer);
  }, [window]);
  const ended = (data?.runs_ended ?? []).map((b) => {
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(b.by_status)) out[normalStatus(k)] = (out[normalStatus(k)] ?? 0) + v;
    return out;
  });
  const totals = OUTCOMES.map((o) => [o, ended.reduce((n, b) => n + (b[o] ?? 0), 0)] as const);
  return (
    <Page
      title="Overview"
      actions={
        <label>
          Window{' '}
          <select value={window} onChange={(e) => navigate(`/overview?window=${e.currentTarget.value}`, true)}>
            {WINDOWS.map((w) => (
              <option key={w} value={w}>
                {w}
              </option>
            ))}
          </select>
        </label>
      }
    >
      <ErrorBox error={error} />
      {data ? (
        <>
          <div class="tiles">
            <div class="tile">
              <span class="muted">Runs in flight</span>
              <strong>{Object.values(data.runs_in_flight).reduce((a, b) => a + b, 0)}</strong>
              <small>
                {Object.entries(data.runs_in_flight)
                  .map(([k, v]) => `${k} ${v}`)
                  .join(' · ') || 'none'}
              </small>
            </div>
            <div class="tile">
              <span class="muted">Step latency p50 / p99</span>
              <strong>
                {duration(data.step_latency.p50_ms)} / {duration(data.step_latency.p99_ms)}
              </strong>
              <small>{data.step_latency.count} steps</small>
            </div>
            <div class="tile">
              <span class="muted">Queue ready / running / dead</span>
              <strong>
                {data.queue.ready ?? 0} / {data.queue.running ?? 0} / {data.queue.dead ?? 0}
              </strong>
              <small>
                {data.queue.oldest_ready
                  ? `oldest ready since ${time(data.queue.oldest_ready.created_at)}`
                  : 'nothing waiting'}
              </small>
            </div>
            <div class="tile">
              <span class="muted">Parked events</span>
              <strong>{data.parked.now}</strong>
              <small>waiting for a retry</small>
            </div>
          </div>
          <h2>Runs ended per {per(data.bucket_ms)}</h2>
          <Bars
            from={data.runs_ended[0]!.at}
            to={data.now}
            buckets={ended}
            series={OUTCOMES}
            title={`Runs ended per ${per(data.bucket_ms)} over ${window}: ${totals.map(([o, n]) => `${n} ${o}`).join(', ')}`}
          />
          <p class="legend">
            {totals.map(([o, n]) => (
              <span key={o} class={`key fill-${o}`}>
                {o.replace('_', ' ')} {n}
              </span>
            ))}
          </p>
          <h2>Events parked per {per(data.bucket_ms)}</h2>
          <Bars
            from={data.runs_ended[0]!.at}
            to={data.now}
            buckets={data.parked.buckets.map((b) => ({ parked: b.count }))}
            series={['parked']}
            title={`Events parked over ${window}: ${data.parked.buckets.reduce((n, b) => n + b.count, 0)}`}
          />
          <p class="muted">From the newest {data.runs_scanned} runs; updated every 5 s.</p>
        </>
      ) : null}
    </Page>
  );
}
