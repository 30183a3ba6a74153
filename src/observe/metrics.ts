import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineEvents } from './events.js';

/** Prometheus metrics of one engine, on a registry of their own (never prom-client's global one). */
export interface Metrics {
  readonly registry: Registry;
  readonly contentType: string;
  /** Reads queue and subscription gauges (one query each), then renders every family. */
  text(): Promise<string>;
  /** Stops listening to the engine. */
  close(): void;
}

/**
 * What the gauges read on each scrape: the engine's operator answers it (`engine.operator`). Only
 * the fields read here are named, so this kernel module imports neither the runtime nor storage.
 */
export interface GaugeSource {
  queueStats(): Promise<
    Array<{
      queue: string;
      ready: number;
      due: number;
      running: number;
      dead: number;
      oldestDueAt: number | null;
      expiredLeases: number;
    }>
  >;
  subscriptionStats(): Promise<Array<{ name: string; behind: number; parked: number }>>;
  /** The database's clock (ms): a task's age is measured on it. */
  now(): Promise<number>;
}

const BATCH = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Distinct (workflow, step) pairs a step label takes; later ones are `_other` (a code workflow may name steps from data). */
const MAX_STEP_LABELS = 1000;

/** A label value kept within `limit` distinct values per process: past it, new ones read `_other`. */
function bounded(limit: number): (workflow: string, value: string) => string {
  const seen = new Set<string>();
  return (workflow, value) => {
    const key = `${workflow}\u0000${value}`;
    if (seen.has(key)) return value;
    if (seen.size >= limit) return '_other';
    seen.add(key);
    return value;
  };
}

/**
 * Metrics fed by the engine's events, plus gauges read through the operator on each scrape. Every label
 * holds a bounded set of values: run kinds, workflow names registered in code or stored (an
 * execution is labelled with its stored workflow's name), step names (at most MAX_STEP_LABELS),
 * queue and subscription names, outcomes, error classes, route templates. Never a run id, a user's value, or a raw path.
 *
 * @example
 * const metrics = createMetrics(engine.events, engine.operator);
 * app.get('/metrics', async () => new Response(await metrics.text(), { headers: { 'content-type': metrics.contentType } }));
 */
export function createMetrics(
  events: EngineEvents,
  gauges: GaugeSource,
  options: {
    processMetrics?: boolean;
    /** The concurrency keys with runs in or waiting (`engine.runs.concurrency`), read on each scrape. */
    concurrency?: () => Promise<{ keys: Array<{ active: string[]; waiting: string[] }> }>;
  } = {},
): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  const runsStarted = new Counter({
    name: 'runledger_runs_started_total',
    help: 'Runs whose first pass began in this process',
    labelNames: ['kind', 'workflow'],
    registers,
  });
  const runsFinished = new Counter({
    name: 'runledger_runs_finished_total',
    help: 'Runs that ended in this process (outcome partial: some of the work failed, not a success)',
    labelNames: ['kind', 'workflow', 'outcome'],
    registers,
  });
  const runsCancelled = new Counter({
    name: 'runledger_runs_cancelled_total',
    help: 'Runs that ended cancelled in this process, by who asked: a user, or the engine enforcing a limit (system)',
    labelNames: ['kind', 'workflow', 'by'],
    registers,
  });
  const runDuration = new Histogram({
    name: 'runledger_run_duration_seconds',
    help: 'From start to end of a run',
    labelNames: ['kind', 'workflow', 'outcome'],
    buckets: SECONDS,
    registers,
  });
  const passDuration = new Histogram({
    name: 'runledger_run_pass_duration_seconds',
    help: 'One pass of a run, by how it ended',
    labelNames: ['kind', 'outcome'],
    buckets: SECONDS,
    registers,
  });
  const stepDuration = new Histogram({
    name: 'runledger_step_duration_seconds',
    help: 'One attempt of a step',
    labelNames: ['workflow', 'outcome'],
    buckets: SECONDS,
    registers,
  });
  const stepAttempts = new Histogram({
    name: 'runledger_step_attempts',
    help: 'The attempt a step succeeded or failed for good on',
    labelNames: ['workflow', 'outcome'],
    buckets: [1, 2, 3, 5, 10, 20],
    registers,
  });
  const stepRetries = new Counter({
    name: 'runledger_step_retries_total',
    help: 'Failed attempts of steps and poll requests that are retried, by error class (5xx, 429, network, timeout, 4xx, other)',
    labelNames: ['workflow', 'class'],
    registers,
  });
  const stepTimeouts = new Counter({
    name: 'runledger_step_timeouts_total',
    help: 'Step attempts and poll requests that timed out, and polls whose maximum wait passed',
    labelNames: ['workflow', 'step'],
    registers,
  });
  const claims = new Counter({
    name: 'runledger_tasks_claimed_total',
    help: 'Tasks claimed by this process',
    labelNames: ['queue'],
    registers,
  });
  const completed = new Counter({
    name: 'runledger_tasks_completed_total',
    help: 'Tasks completed by this process',
    labelNames: ['queue'],
    registers,
  });
  const retries = new Counter({
    name: 'runledger_task_retries_total',
    help: 'Failed attempts scheduled to retry',
    labelNames: ['queue'],
    registers,
  });
  const dead = new Counter({
    name: 'runledger_tasks_dead_total',
    help: 'Tasks sent to the dead letters',
    labelNames: ['queue'],
    registers,
  });
  const leasesLost = new Counter({
    name: 'runledger_leases_lost_total',
    help: 'Leases this process lost to another',
    labelNames: ['what'],
    registers,
  });
  const parkedTotal = new Counter({
    name: 'runledger_subscription_parked_total',
    help: 'Events parked by this process',
    labelNames: ['subscription'],
    registers,
  });
  const httpDuration = new Histogram({
    name: 'runledger_http_request_duration_seconds',
    help: 'HTTP requests by route template',
    labelNames: ['method', 'route', 'status'],
    buckets: SECONDS,
    registers,
  });
  const txDuration = new Histogram({
    name: 'runledger_store_transaction_duration_seconds',
    help: 'Store transactions',
    labelNames: ['outcome'],
    buckets: [0.0005, 0.001, 0.0025, ...SECONDS],
    registers,
  });
  const batchWrites = new Histogram({
    name: 'runledger_store_batch_writes',
    help: 'Writes (of runs and tasks) one group commit carried',
    buckets: BATCH,
    registers,
  });
  const batchEvents = new Histogram({
    name: 'runledger_store_batch_events',
    help: 'Events one group commit appended',
    buckets: BATCH,
    registers,
  });
  const errors = new Counter({
    name: 'runledger_background_errors_total',
    help: 'Failures of background loops (workers, subscriptions, retention), retried',
    labelNames: ['what'],
    registers,
  });
  const pruned = new Counter({
    name: 'runledger_retention_deleted_total',
    help: 'Records retention deleted',
    labelNames: ['kind', 'record'],
    registers,
  });
  const depth = new Gauge({
    name: 'runledger_queue_tasks',
    help: 'Tasks per queue and state (ready = due now, scheduled = due later)',
    labelNames: ['queue', 'state'],
    registers,
  });
  const oldest = new Gauge({
    name: 'runledger_queue_oldest_ready_age_seconds',
    help: 'How long the oldest due task has waited',
    labelNames: ['queue'],
    registers,
  });
  const expired = new Gauge({
    name: 'runledger_queue_expired_leases',
    help: 'Running tasks whose lease ran out (their worker died)',
    labelNames: ['queue'],
    registers,
  });
  const lag = new Gauge({
    name: 'runledger_subscription_lag_positions',
    help: 'Journal positions between a subscription and the head',
    labelNames: ['subscription'],
    registers,
  });
  const parked = new Gauge({
    name: 'runledger_subscription_parked_events',
    help: 'Events parked and not yet retried or skipped',
    labelNames: ['subscription'],
    registers,
  });

  // summed over the keys: a key is a user's value (`checkout:42`), never a label
  const keyRuns = new Gauge({
    name: 'runledger_concurrency_runs',
    help: 'Runs holding a concurrency slot (in_use) or waiting for one (waiting), over every key',
    labelNames: ['state'],
    registers,
  });
  const keysFull = new Gauge({
    name: 'runledger_concurrency_keys_with_waiting',
    help: 'Concurrency keys with a run waiting for a slot',
    registers,
  });

  // a limit's name is the operator's (`limits set`), a bounded set: a label; a run or a key never is
  const rateWaits = new Counter({
    name: 'runledger_rate_limit_waits_total',
    help: 'Steps told to wait for a named rate limit (journaled in this process)',
    labelNames: ['limit'],
    registers,
  });
  const debounced = new Counter({
    name: 'runledger_debounced_starts_total',
    help: 'Starts that joined an open debounce window (its run takes their input) instead of starting a run',
    registers,
  });
  const budgetDecisions = new Counter({
    name: 'runledger_budget_decisions_total',
    help: 'Runs that passed their budget (exceeded), and the decisions on their waits (approved, rejected)',
    labelNames: ['decision'],
    registers,
  });

  const s = (ms: number) => ms / 1000;
  const step = bounded(MAX_STEP_LABELS);
  const timedOut = (workflow: string, name: string) => stepTimeouts.inc({ workflow, step: step(workflow, name) });
  const offs = [
    events.on('run:start', (e) => runsStarted.inc({ kind: e.kind, workflow: e.workflow })),
    events.on('run:end', (e) => {
      runsFinished.inc({ kind: e.kind, workflow: e.workflow, outcome: e.outcome });
      if (e.outcome === 'cancelled')
        runsCancelled.inc({ kind: e.kind, workflow: e.workflow, by: e.cancelledBy ?? 'user' });
      runDuration.observe({ kind: e.kind, workflow: e.workflow, outcome: e.outcome }, s(e.durationMs));
    }),
    events.on('run:pass', (e) => passDuration.observe({ kind: e.kind, outcome: e.outcome }, s(e.durationMs))),
    events.on('step:complete', (e) => {
      stepDuration.observe({ workflow: e.workflow, outcome: 'success' }, s(e.durationMs));
      stepAttempts.observe({ workflow: e.workflow, outcome: 'success' }, e.attempt);
    }),
    events.on('step:fail', (e) => {
      stepDuration.observe({ workflow: e.workflow, outcome: e.willRetry ? 'retrying' : 'failed' }, s(e.durationMs));
      if (!e.willRetry) stepAttempts.observe({ workflow: e.workflow, outcome: 'failed' }, e.attempt);
      if (e.willRetry) stepRetries.inc({ workflow: e.workflow, class: e.errorClass });
      if (e.errorClass === 'timeout') timedOut(e.workflow, e.step);
    }),
    events.on('poll:attempt', (e) => {
      if (e.outcome === 'retrying') stepRetries.inc({ workflow: e.workflow, class: e.errorClass ?? 'other' });
      if (e.outcome === 'timed_out' || e.errorClass === 'timeout') timedOut(e.workflow, e.step);
    }),
    events.on('flow:rate_wait', (e) => rateWaits.inc({ limit: e.limit })),
    events.on('flow:debounced', () => debounced.inc()),
    events.on('flow:budget', (e) => budgetDecisions.inc({ decision: e.decision })),
    events.on('task:claim', (e) => claims.inc({ queue: e.queue })),
    events.on('task:complete', (e) => completed.inc({ queue: e.queue })),
    events.on('task:retry', (e) => retries.inc({ queue: e.queue })),
    events.on('task:dead', (e) => dead.inc({ queue: e.queue })),
    events.on('lease:lost', (e) => leasesLost.inc({ what: e.what })),
    events.on('subscription:parked', (e) => parkedTotal.inc({ subscription: e.subscription })),
    events.on('http:request', (e) =>
      httpDuration.observe({ method: e.method, route: e.route, status: String(e.status) }, s(e.durationMs)),
    ),
    events.on('engine:error', (e) => errors.inc({ what: e.what })),
    events.on('retention:pruned', (e) => {
      if (e.dryRun) return;
      pruned.inc({ kind: e.kind, record: 'run' }, e.runs);
      pruned.inc({ kind: e.kind, record: 'task' }, e.tasks);
      pruned.inc({ kind: e.kind, record: 'event' }, e.events);
    }),
    events.on('store:transaction', (e) =>
      txDuration.observe({ outcome: e.ok ? 'commit' : 'rollback' }, s(e.durationMs)),
    ),
    events.on('store:batch', (e) => {
      batchWrites.observe(e.writes);
      batchEvents.observe(e.events);
    }),
  ];

  return {
    registry,
    contentType: registry.contentType,
    async text() {
      const [queues, subscriptions, now] = await Promise.all([
        gauges.queueStats(),
        gauges.subscriptionStats(),
        gauges.now(),
      ]);
      for (const gauge of [depth, oldest, expired, lag, parked]) gauge.reset();
      for (const q of queues) {
        depth.set({ queue: q.queue, state: 'ready' }, q.due);
        depth.set({ queue: q.queue, state: 'scheduled' }, q.ready - q.due);
        depth.set({ queue: q.queue, state: 'running' }, q.running);
        depth.set({ queue: q.queue, state: 'dead' }, q.dead);
        oldest.set({ queue: q.queue }, q.oldestDueAt === null ? 0 : Math.max(0, now - q.oldestDueAt) / 1000);
        expired.set({ queue: q.queue }, q.expiredLeases);
      }
      for (const sub of subscriptions) {
        lag.set({ subscription: sub.name }, sub.behind);
        parked.set({ subscription: sub.name }, sub.parked);
      }
      if (options.concurrency) {
        const { keys } = await options.concurrency();
        keyRuns.set(
          { state: 'in_use' },
          keys.reduce((n, k) => n + k.active.length, 0),
        );
        keyRuns.set(
          { state: 'waiting' },
          keys.reduce((n, k) => n + k.waiting.length, 0),
        );
        keysFull.set(keys.filter((k) => k.waiting.length > 0).length);
      }
      return registry.metrics();
    },
    close: () => {
      for (const off of offs) off();
    },
  };
}
