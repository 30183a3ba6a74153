import { describeError, NotFoundError, ValidationError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Store, StoredEvent } from '../storage/store.js';
import { RUN_EVENT } from './events.js';
import type { Blobs } from './pass/blobs.js';
import { History, runStream, type EntryKind, type Seq } from './pass/history.js';
import { Pass, PassAborted, type Outcome } from './pass/pass.js';
import type { Workflow } from './workflow.js';

/** An event of a run's history: as the journal holds it (`timestamp` in ms) or as the API shows it (ISO 8601). */
export interface RecordedEvent {
  version: number;
  type: string;
  timestamp: number | string;
  data: unknown;
}

/** A run's recorded history: its events, oldest first (`GET /runs/{id}/events`, or the run's stream in the journal). */
export interface RecordedHistory {
  runId: string;
  events: RecordedEvent[];
}

export interface ReplayResult {
  runId: string;
  /** The workflow the history is of (of its last generation). */
  workflow: string;
  /** The code asks for the calls the history holds, in its order, and ends as the run did (or goes on past its end). */
  replays: boolean;
  /** Where the code first departs from the history, in plain words, when it does not replay. */
  divergence?: string;
}

/** A replay that neither ends nor reaches a call its history has no answer for is given up on after this long. */
const REPLAY_WAIT_MS = 10_000;

/** The pass asked to write: the history has no answer for its call, so the replay got to its end. */
class PastHistory extends Error {}

/**
 * The journal of a replay's pass: it refuses every write, so no step function, sleep or wait whose result is not
 * recorded ever runs, and the pass ends at the first call its history does not answer.
 */
const refusing = {
  group: { submit: () => Promise.reject(new PastHistory('a replay writes nothing')) },
  readStream: async () => [],
} as unknown as Journal;

/**
 * Runs `workflows`' code through a run's recorded history, in memory: every call the history answers returns its
 * recorded result (no step function, sleep or wait runs, nothing is written), and the replay ends at the first call
 * it does not answer (a run in flight stops there: that replays) or when the code ends. Each generation of a run
 * that continued as new is replayed on its own.
 *
 * @example
 * const { replays, divergence } = await replayHistory({ runId: 'r1', events }, [order]);
 */
export async function replayHistory(recorded: RecordedHistory, workflows: Workflow[]): Promise<ReplayResult> {
  const generations = splitGenerations(recorded.events.map(storedEvent));
  const last = new History(generations.at(-1) ?? []);
  const result = { runId: recorded.runId, workflow: last.workflow };
  if (last.version === 0 || !last.started)
    throw new ValidationError(`histories[${recorded.runId}]`, 'holds no run.started: not a run of a workflow');
  for (const [g, events] of generations.entries()) {
    const history = new History(events);
    const code = workflows.find((w) => w.name === history.workflow);
    const ended = { continued: g < generations.length - 1, at: events.at(-1)!.timestamp };
    const divergence = code
      ? await replayGeneration(recorded.runId, history, code, ended)
      : `the code has no workflow '${history.workflow}'`;
    if (divergence !== null)
      return { ...result, replays: false, divergence: g > 0 ? `generation ${g}, ${divergence}` : divergence };
  }
  return { ...result, replays: true };
}

/**
 * Replays each recorded history through `workflows` (new code), in memory and writing nothing: recorded results
 * stand in for every step, sleep and wait. Each result says whether the run replays, or where the code first
 * departs from its history, in plain words. A run still in flight replays up to where its history ends.
 *
 * @example
 * const results = await replayHistories([await recordedHistory(engine, 'order-1')], [order]);
 * expect(results.filter((r) => !r.replays)).toEqual([]);
 */
export async function replayHistories(histories: RecordedHistory[], workflows: Workflow[]): Promise<ReplayResult[]> {
  const results: ReplayResult[] = [];
  for (const history of histories) results.push(await replayHistory(history, workflows));
  return results;
}

/**
 * Run `runId`'s history as an engine's journal holds it, its big values whole: what `replayHistories` takes.
 *
 * @example const history = await recordedHistory(engine, 'order-1');
 */
export async function recordedHistory(
  engine: { journal: Journal; runtime: { blobs: Blobs } },
  runId: string,
): Promise<RecordedHistory> {
  const stored = await engine.journal.readStream(runStream(runId), { limit: 1_000_000 });
  if (stored.length === 0) throw new NotFoundError(`run ${runId} not found`);
  return { runId, events: await engine.runtime.blobs.resolveEvents(stored) };
}

/** The first divergence of the code from one generation of a run's history, null when it replays. */
async function replayGeneration(
  runId: string,
  history: History,
  code: Workflow,
  ended: { continued: boolean; at: number },
): Promise<string | null> {
  // the replay's clock stands where the history ends, so a deadline after that never comes during it; left in, the
  // pass arms a real-time timer for it (deadline − end), which a replay given up on never clears: it kept
  // `runledger replay` and the server's replay alive until the deadline, then fired into the abandoned pass.
  // A deadline at or before the end stays: the pass meets it at once, as the run did, and arms nothing.
  if (history.deadline !== null && history.deadline > ended.at) history.deadline = null;
  const pass = new Pass({
    store: {} as Store,
    journal: refusing,
    runId,
    lease: { id: 'replay', leaseToken: 'replay' },
    leaseMs: REPLAY_WAIT_MS,
    maxEventBytes: Number.POSITIVE_INFINITY,
    history,
    children: { start: async () => {}, view: async () => undefined },
    // the clock stands where the history ends: timers due later still wait, as they did then
    clock: { now: () => ended.at },
  });
  let timer: NodeJS.Timeout | undefined;
  const givenUp = new Promise<'given up'>((done) => (timer = setTimeout(() => done('given up'), REPLAY_WAIT_MS)));
  const outcome = await Promise.race([pass.execute(code), givenUp]).finally(() => clearTimeout(timer));
  if (outcome === 'given up')
    return `the code neither ended nor made its next call within ${REPLAY_WAIT_MS / 1000} s (does it await something outside ctx?)`;
  if (pass.mismatch) {
    const { seq, kind, name } = pass.mismatch;
    const entry = history.entries.get(seq)!;
    return differs(seq, entry, `the code now calls \`${callWords(kind, name)}\``);
  }
  if (outcome.kind === 'suspended') return null;
  if (outcome.kind === 'failed' && outcome.error instanceof PassAborted)
    return outcome.error.cause instanceof PastHistory ? null : `the code stops: ${describeError(outcome.error.cause)}`;
  const next = nextCall(history, pass.position);
  if (next !== undefined) return differs(next, history.entries.get(next)!, `the code now ${ending(outcome)} before it`);
  return endingDiffers(history, ended.continued, outcome);
}

/** `call 4: the history has `ctx.step('charge')`, <what the code does now> — guard …`. */
function differs(seq: Seq, entry: { kind: EntryKind; name: string }, now: string): string {
  return `call ${seq}: the history has \`${callWords(entry.kind, entry.name)}\`, ${now} — guard the change with \`ctx.patched('…')\``;
}

/** How code makes a call of `kind` named `name`: `ctx.step('charge')`, `ctx.now()`, `ctx.child(billing)`. */
export function callWords(kind: EntryKind, name: string): string {
  switch (kind) {
    case 'value':
      return name === 'usage' ? 'ctx.usage(…)' : `ctx.${name}()`;
    case 'child':
      return `ctx.child(${name})`;
    case 'wait':
      return `ctx.waitForEvent('${name}')`;
    case 'state':
      return `ctx.setState('${name}')`;
    default:
      return `ctx.${kind}('${name}')`;
  }
}

function ending(outcome: Exclude<Outcome, { kind: 'suspended' }>): string {
  if (outcome.kind === 'completed') return 'returns';
  if (outcome.kind === 'continued') return 'continues as new';
  return `fails (${describeError(outcome.error)})`;
}

/**
 * The code ended within its history: a run that completed (or continued as new) must end so again; a run in flight
 * may only fail as a recorded failure makes it (a call that failed for good, a cancel).
 */
function endingDiffers(
  history: History,
  continued: boolean,
  outcome: Exclude<Outcome, { kind: 'suspended' }>,
): string | null {
  const ended = history.terminal?.type;
  const was = ended === RUN_EVENT.runCompleted ? 'completed' : continued ? 'continued' : null;
  if (was !== null && outcome.kind !== was)
    return `the run ${was === 'completed' ? 'completed' : 'continued as new'} in the history, the code now ${ending(outcome)}`;
  if (ended !== undefined || continued || outcome.kind !== 'failed' || history.cancelRequested) return null;
  const error = describeError(outcome.error);
  const recorded = [...history.entries.values()].some((e) =>
    e.events.some((x) => (x.data as { error?: string }).error === error),
  );
  return recorded ? null : `the code now ${ending(outcome)} where the history goes on`;
}

/** The first position of the run's own order past `position` that the history holds a call at. */
function nextCall(history: History, position: number): number | undefined {
  let next: number | undefined;
  for (const seq of history.entries.keys())
    if (typeof seq === 'number' && seq > position && (next === undefined || seq < next)) next = seq;
  return next;
}

/** Splits a run's events into its generations: each `run.continued` starts one. */
function splitGenerations(events: StoredEvent[]): StoredEvent[][] {
  const generations: StoredEvent[][] = [];
  for (const event of events) {
    if (generations.length === 0 || event.type === RUN_EVENT.runContinued) generations.push([]);
    generations.at(-1)!.push(event);
  }
  return generations;
}

function storedEvent(e: RecordedEvent): StoredEvent {
  const timestamp = typeof e.timestamp === 'number' ? e.timestamp : Date.parse(e.timestamp);
  return { position: e.version, streamId: '', version: e.version, type: e.type, data: e.data, metadata: {}, timestamp };
}
