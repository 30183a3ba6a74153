import { toMs } from '../../duration.js';
import { ValidationError } from '../../errors.js';
import { fieldOf, matchKey, resolveMatch, type EventMatch } from '../match.js';
import type { NewEvent, Store } from '../../storage/store.js';
import { rebuild, Suspension, type FailureData } from './calls.js';
import { RUN_EVENT } from '../events.js';
import type { History, Seq } from './history.js';
import type { Children } from './pass.js';
import type { WaitOptions, Workflow } from '../workflow.js';

/**
 * The calls that wait or record rather than work: durable timers, signal waits, child runs, business
 * states and journaled values. Each returns what the journal recorded for its position on replay;
 * the first time, it journals what it does and, to wait, throws a Suspension.
 */

/** What these calls need of the pass they run in. */
export interface WaitHost {
  readonly runId: string;
  readonly history: History;
  /** Signals taken by waits of this pass, so parallel waits for one name take them in call order. */
  readonly claimedSignals: Set<number>;
  readonly children: Children;
  write(events: NewEvent[], also?: (tx: Store) => Promise<void>): Promise<void>;
  /** The database clock (see StoreClock). */
  now(): number;
  /** Throws when the run was cancelled or passed its deadline: no new work starts. */
  checkLive(): void;
  /** The code entered business state `state`: journaled by this pass (`fresh`) or replayed. */
  entered?(state: string, fresh: boolean): void;
}

export async function runSleep(host: WaitHost, seq: Seq, name: string, until: () => number): Promise<void> {
  const h = host.history;
  if (h.find(seq, RUN_EVENT.sleepCompleted)) return;
  const started = h.find(seq, RUN_EVENT.sleepStarted)?.data as { until: number } | undefined;
  host.checkLive();
  const at = started?.until ?? until();
  if (!started) await host.write([{ type: RUN_EVENT.sleepStarted, data: { seq, name, until: at } }]);
  if (host.now() < at) throw new Suspension(at);
  await host.write([{ type: RUN_EVENT.sleepCompleted, data: { seq, name } }]);
}

/** A wait as its call gives it: its timeout, and the business events it takes (see `WaitOptions`). */
export interface WaitSpec {
  timeoutMs: number | null;
  match?: EventMatch;
  lookbackMs?: number;
}

const MAX_LOOKBACK_MS = 86_400_000;

/** The wait `options` name, its match resolved against the run's `input`; a ValidationError names what is wrong. */
export function waitSpec(name: string, options: WaitOptions, input: unknown): WaitSpec {
  const at = `waitForEvent(${name})`;
  const timeoutMs = options.timeout === undefined ? null : toMs(options.timeout, `${at}.timeout`);
  if (options.match === undefined) {
    if (options.lookback !== undefined) throw new ValidationError(`${at}.lookback`, 'is for a wait with a match');
    return { timeoutMs };
  }
  const lookbackMs = options.lookback === undefined ? 0 : toMs(options.lookback, `${at}.lookback`);
  if (lookbackMs > MAX_LOOKBACK_MS)
    throw new ValidationError(`${at}.lookback`, `must be at most 24h (got ${lookbackMs} ms)`);
  return { timeoutMs, match: resolveMatch(options.match, input, `${at}.match`), lookbackMs };
}

export async function runWait(host: WaitHost, seq: Seq, name: string, spec: WaitSpec): Promise<unknown> {
  const { timeoutMs } = spec;
  const h = host.history;
  const received = h.find(seq, RUN_EVENT.waitCompleted);
  if (received) return (received.data as { payload: unknown }).payload;
  if (h.find(seq, RUN_EVENT.waitTimedOut)) return null;
  host.checkLive();
  // chosen before any await, so parallel waits for one name take signals in call order
  const signal = h.signals.find(
    (s) =>
      s.name === name && !h.consumed.has(s.version) && !host.claimedSignals.has(s.version) && takes(spec, s.payload),
  );
  if (signal) host.claimedSignals.add(signal.version);
  const started = h.find(seq, RUN_EVENT.waitStarted)?.data as { deadline: number | null } | undefined;
  const deadline = started ? started.deadline : timeoutMs === null ? null : host.now() + timeoutMs;
  // a wait with a match is indexed by triggers/ from this event: the events it takes are sent to it as signals `name`
  const matching = spec.match ? { match: spec.match, lookback: spec.lookbackMs ?? 0 } : {};
  if (!started) await host.write([{ type: RUN_EVENT.waitStarted, data: { seq, name, deadline, ...matching } }]);
  // the end of a wait with a match names it, so triggers/ takes the wait out of its index
  const ended = spec.match ? { match: spec.match } : {};
  if (signal) {
    await host.write([
      { type: RUN_EVENT.waitCompleted, data: { seq, name, signal: signal.version, payload: signal.payload, ...ended } },
    ]);
    return signal.payload;
  }
  if (deadline !== null && host.now() >= deadline) {
    await host.write([{ type: RUN_EVENT.waitTimedOut, data: { seq, name, ...ended } }]);
    return null;
  }
  throw new Suspension(deadline ?? Number.POSITIVE_INFINITY);
}

/**
 * Whether a wait takes a signal: any signal sent to the run by its name, but a business event (an envelope of type
 * `name`, sent by triggers/ to every run whose wait or cancel matches it) only when its field matches this wait's,
 * so of two waits for one type side by side, neither takes the other's event.
 */
function takes(spec: WaitSpec, payload: unknown): boolean {
  if (!spec.match || typeof payload !== 'object' || payload === null || !('detail-type' in payload)) return true;
  const detail = (payload as { detail?: unknown }).detail;
  return matchKey(fieldOf(detail, spec.match.path)) === matchKey(spec.match.value);
}

export async function runChild(
  host: WaitHost,
  seq: Seq,
  workflow: Workflow,
  input: unknown,
  id: string | undefined,
): Promise<unknown> {
  const h = host.history;
  const completed = h.find(seq, RUN_EVENT.childCompleted);
  if (completed) return (completed.data as { output: unknown }).output;
  const failed = h.find(seq, RUN_EVENT.childFailed);
  if (failed) throw rebuild(failed.data as FailureData);
  host.checkLive();
  const started = h.find(seq, RUN_EVENT.childStarted)?.data as { childId: string } | undefined;
  const childId = started?.childId ?? id ?? `${host.runId}:${workflow.name}#${seq}`;
  if (!started) {
    const parent = { runId: host.runId, seq };
    await host.write([{ type: RUN_EVENT.childStarted, data: { seq, name: workflow.name, childId } }], (tx) =>
      host.children.start(tx, workflow, input, childId, parent),
    );
  }
  const view = await host.children.view(childId);
  if (view?.status === 'success' || view?.status === 'partial_success') {
    await host.write([
      { type: RUN_EVENT.childCompleted, data: { seq, name: workflow.name, childId, output: view.output } },
    ]);
    return view.output;
  }
  if (view?.status === 'failed' || view?.status === 'cancelled') {
    const error = view.error ?? `CancelledError: child run ${childId} was cancelled`;
    const errorName = error.split(':')[0] ?? 'Error';
    await host.write([{ type: RUN_EVENT.childFailed, data: { seq, name: workflow.name, childId, error, errorName } }]);
    throw rebuild({ error, errorName });
  }
  // the child's end wakes this run
  throw new Suspension(Number.POSITIVE_INFINITY);
}

export async function recordState(host: WaitHost, seq: Seq, state: string): Promise<void> {
  if (host.history.find(seq, RUN_EVENT.stateChanged)) return host.entered?.(state, false);
  await host.write([{ type: RUN_EVENT.stateChanged, data: { seq, name: state } }]);
  host.entered?.(state, true);
}

export async function recordValue(host: WaitHost, seq: Seq, kind: string, make: () => number): Promise<number> {
  const recorded = host.history.find(seq, RUN_EVENT.valueRecorded);
  if (recorded) return (recorded.data as { value: number }).value;
  host.checkLive();
  const value = make();
  await host.write([{ type: RUN_EVENT.valueRecorded, data: { seq, name: kind, value } }]);
  return value;
}

/** A business state's name: what `setState` accepts. */
export function checkState(state: string): string {
  if (typeof state !== 'string' || !/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(state))
    throw new ValidationError(
      'state',
      `must be 1–64 letters, digits or _, starting with a letter (got ${JSON.stringify(state)})`,
    );
  return state;
}
