import type { Journal } from '../../journal/journal.js';
import { KeptViews } from '../../journal/kept.js';
import type { ErrorClass } from '../../observe/error-class.js';
import type { Store, StoredEvent } from '../../storage/store.js';
import type { Seq } from '../pass/history.js';
import type { Budget } from '../flow.js';
import { RUN_EVENT } from '../events.js';
import { versionTag } from '../start/versions.js';
import { apply, compareSeq, newView } from './apply.js';

/** A run's status; the one vocabulary of the API, the CLI and the dashboard (docs/glossary.md). */
export type RunStatus =
  | 'pending'
  | 'running'
  | 'sleeping'
  | 'waiting'
  | 'success'
  | 'partial_success'
  | 'failed'
  | 'cancelled';
/** `timed_out`: a poll whose maximum wait passed. */
export type StepStatus = 'running' | 'retrying' | 'success' | 'failed' | 'timed_out';

export const RUN_STATUSES = [
  'pending',
  'running',
  'sleeping',
  'waiting',
  'success',
  'partial_success',
  'failed',
  'cancelled',
] as const satisfies readonly RunStatus[];

/**
 * Spellings of earlier versions, still accepted as filters (and found in views stored by them)
 * for one version: `succeeded` (runs), `ok` / `error` (steps), and the session statuses.
 */
const OLD_SPELLINGS: Record<string, RunStatus> = {
  succeeded: 'success',
  ok: 'success',
  error: 'failed',
  completed: 'success',
  initiated: 'pending',
  busy: 'running',
};

/** A status filter as a caller spelled it, in today's vocabulary (`succeeded` → `success`); anything else unchanged. */
export function currentStatus(status: string): string {
  const lower = status.toLowerCase();
  return OLD_SPELLINGS[lower] ?? (/^[A-Z_]+$/.test(status) ? lower : status);
}

export interface StepView {
  seq: Seq;
  name: string;
  status: StepStatus;
  /** `poll`: a `ctx.poll` (its attempts are its requests). Absent: a `ctx.step`. */
  kind?: 'poll';
  label?: string;
  attempts: number;
  startedAt: number;
  finishedAt: number | null;
  durationMs: number | null;
  input: unknown;
  output: unknown;
  error: string | null;
  /** What kind of failure `error` was (observe/error-class.ts), and the HTTP status it carried: a stored workflow's messages are chosen by them. */
  errorClass?: ErrorClass;
  errorStatus?: number;
  /** A poll's cancel, once the run's cancellation (or the poll's timeout) sent it: see CancelView. */
  cancel?: CancelView;
  /**
   * An effect step (`effect` option): `intent` journaled before each call; `unknown` when a call's outcome was not
   * recorded; then `reconciled` (it happened: the output is the reconciled one) or `repeated` (it did not: run again).
   */
  effect?: 'intent' | 'unknown' | 'reconciled' | 'repeated';
}

/**
 * A poll's cancel: `sending`, then `sent` (no confirmation asked) or `confirming` → `confirmed` | `unconfirmed`
 * (its `until` gave up: `reason` says why), or `failed` (the cancel request itself, `reason` its error).
 */
export interface CancelView {
  status: 'sending' | 'sent' | 'confirming' | 'confirmed' | 'unconfirmed' | 'failed';
  /** Status requests made to confirm it. */
  polls: number;
  reason: string | null;
}

/** A run as people read it: a projection of its journal, written in the transaction of each event. */
export interface RunView {
  id: string;
  workflow: string;
  /** The code version the run started on (absent on runs older than versions). */
  version?: string | null;
  status: RunStatus;
  /**
   * Why a `waiting` run has not begun, in words a person reads: `concurrency user:42 — 1 of 1 in use`, `not before
   * 2026-11-29T12:00:00.000Z`. Null (or absent) once it runs.
   */
  waitingFor?: string | null;
  /** The run's priority, when not 0: its passes are claimed before those of lower ones (-100…100). */
  priority?: number;
  /** The second name a workflow pause holds it by (`WorkflowOptions.pauseKey`: a stored workflow's id), when it has one. */
  pauseKey?: string;
  input: unknown;
  output: unknown;
  error: string | null;
  /** Set when compensations ran: how many, and how many of them failed. */
  compensations: { ran: number; failed: number } | null;
  /** The business state the run last entered (`ctx.setState`), or null. */
  state?: string | null;
  /** The step or poll that started last and has not ended, with its label. */
  current?: { name: string; label: string | null } | null;
  steps: StepView[];
  /** How many times the run continued as new (`ctx.continueAsNew`); its steps are the current generation's. */
  generation?: number;
  /** The run's `ctx.patched(id)` decisions in this generation: true, it took the new branch. */
  patches?: Record<string, boolean>;
  /** What the run used: `ctx.usage` totals and its model calls' tokens and cost; absent until it used anything. */
  usage?: { tokens: number; cost: number; toolCalls: number };
  /** The run's budget: its start's, grown by each approval; absent when it has none. */
  budget?: Budget;
  /** The budget wait a person decides (`POST /runs/{id}/budget/approve`), while the run waits for one. */
  budgetWait?: { round: number; reason: string } | null;
  /** The unknown effect a person decides (`decideEffect`), while the run waits for one. */
  effectWait?: { seq: Seq; name: string; attempt: number } | null;
  /** As stored: how many pages of ended steps are kept apart from the view (`readRunView` joins them). */
  stepPages?: number;
  createdAt: number;
  updatedAt: number;
}

export const RUN_VIEW = 'run';
/**
 * Pages of a run's ended steps, keyed `<run id>#<page>`: a view keeps at most PAGE_STEPS ended
 * steps, so a step's write costs the same in a run's ten-thousandth step as in its first.
 */
export const RUN_STEPS = 'run-steps';
const PAGE_STEPS = 50;

const TERMINAL = new Set<RunStatus>(['success', 'partial_success', 'failed', 'cancelled']);

export function isTerminal(status: RunStatus): boolean {
  return TERMINAL.has(status);
}

/** The views a transaction has read or written so far (each transaction is its own Store object). */
const inTransaction = new WeakMap<Store, Map<string, RunView>>();

/**
 * Registers the projection that keeps each run's view in step with its journal. It takes an
 * append's events together, so a group commit carrying many runs' steps reads their views in one
 * statement and writes each once, in another (not two statements per event).
 *
 * The views it wrote are kept once their transaction has committed (`KeptViews`), so a pass's
 * steps cost no view read. `committed` gives a copy of a kept view to a reader woken by the commit
 * that reached its version.
 */
export function projectRunViews(journal: Journal): CommittedViews {
  const kept = new KeptViews<RunView>();
  journal.projectBatch(
    [
      RUN_EVENT.runStarted,
      RUN_EVENT.stepStarted,
      RUN_EVENT.stepCompleted,
      RUN_EVENT.stepFailed,
      RUN_EVENT.pollStarted,
      RUN_EVENT.pollAttempted,
      RUN_EVENT.pollCompleted,
      RUN_EVENT.pollFailed,
      RUN_EVENT.pollTimedOut,
      RUN_EVENT.stateChanged,
      RUN_EVENT.compensationStarted,
      RUN_EVENT.compensationConfirming,
      RUN_EVENT.compensationPolled,
      RUN_EVENT.compensationCompleted,
      RUN_EVENT.compensationFailed,
      RUN_EVENT.sleepStarted,
      RUN_EVENT.sleepCompleted,
      RUN_EVENT.waitStarted,
      RUN_EVENT.waitCompleted,
      RUN_EVENT.waitTimedOut,
      RUN_EVENT.runCompleted,
      RUN_EVENT.runFailed,
      RUN_EVENT.runCancelled,
      RUN_EVENT.runContinued,
      RUN_EVENT.patchRecorded,
      RUN_EVENT.runAdmitted,
      RUN_EVENT.runThrottled,
      RUN_EVENT.runDebounced,
      RUN_EVENT.runBatched,
      RUN_EVENT.usageRecorded,
      RUN_EVENT.budgetExceeded,
      RUN_EVENT.budgetDecided,
      RUN_EVENT.stepRateWaiting,
      RUN_EVENT.stepIntent,
      RUN_EVENT.stepUnknown,
      RUN_EVENT.stepReconciled,
    ],
    async (events, tx) => {
      // a transaction may append to one run more than once: its views are read once
      let views = inTransaction.get(tx);
      if (!views) inTransaction.set(tx, (views = new Map()));
      const idOf = (event: StoredEvent) => event.streamId.slice('run:'.length);
      const read = new Map<string, RunView | undefined>();
      const unread = new Set<string>();
      const started = new Set(events.filter((e) => e.type === RUN_EVENT.runStarted).map(idOf));
      for (const event of events) {
        const id = idOf(event);
        if (started.has(id) || views.has(id) || read.has(id) || unread.has(id)) continue;
        const cached = kept.take(id, event.version - 1);
        if (cached) read.set(id, cached);
        else unread.add(id);
      }
      for (const row of unread.size > 0 ? await tx.projectionGetMany({ name: RUN_VIEW, keys: [...unread] }) : [])
        read.set(row.key, runView(row.value));
      const changed = new Map<string, RunView>();
      const versions = new Map<string, number>();
      const dropped: string[] = [];
      for (const event of events) {
        const id = idOf(event);
        const view =
          event.type === RUN_EVENT.runStarted ? newView(id, event) : (changed.get(id) ?? views.get(id) ?? read.get(id));
        if (!view) continue;
        // a new generation starts with no steps: its predecessor's pages go
        if (event.type === RUN_EVENT.runContinued) dropped.push(...pageKeys(id, view.stepPages ?? 0));
        apply(view, event);
        view.updatedAt = event.timestamp;
        views.set(id, view);
        changed.set(id, view);
        versions.set(id, event.version);
      }
      if (changed.size === 0) return;
      const pages = [...changed].flatMap(([id, view]) => pageOut(id, view));
      for (const key of dropped) await tx.projectionDelete({ name: RUN_STEPS, key });
      if (pages.length > 0) await tx.projectionPutMany({ name: RUN_STEPS, rows: pages });
      await tx.projectionPutMany({ name: RUN_VIEW, rows: [...changed].map(([key, value]) => ({ key, value })) });
      tx.onCommit(() => {
        for (const [id, view] of changed) kept.keep(id, versions.get(id)!, view);
      });
    },
  );
  return {
    committed: (id, version) => {
      const view = kept.peek(id, version);
      // the output a copy: the kept view is changed in place by the run's next append
      return view && { status: view.status, output: structuredClone(view.output), error: view.error };
    },
  };
}

/** The run views this process committed last, by the version of the run's stream they are as of. */
export interface CommittedViews {
  /**
   * Run `id`'s status, output and error as of stream version `version`, if its view is kept here
   * (not the whole view: a copy of its steps cost a 10-step run 2% of its process time).
   */
  committed(id: string, version: number): Pick<RunView, 'status' | 'output' | 'error'> | undefined;
}

/**
 * Run `id`'s view as transaction `tx`'s appends so far left it (without the ended steps moved to
 * pages), if `tx` appended to the run: a projection of the same append reads it without a query.
 */
export function projectedView(tx: Store, id: string): RunView | undefined {
  return inTransaction.get(tx)?.get(id);
}

/** A run's view with all its steps (those kept on pages of their own joined in, in call order). */
export async function readRunView(store: Store, id: string): Promise<RunView | undefined> {
  const view = runView(await store.projectionGet({ name: RUN_VIEW, key: id }));
  if (!view?.stepPages) return view;
  const pages = await store.projectionGetMany({ name: RUN_STEPS, keys: pageKeys(id, view.stepPages) });
  view.steps = [...pages.flatMap((row) => row.value as StepView[]), ...view.steps].sort((x, y) =>
    compareSeq(x.seq, y.seq),
  );
  delete view.stepPages;
  return view;
}

/** The tag of run `id`'s passes (`versionTag`), from its view; none for a run from before versions, or no run. */
export async function runTag(store: Store, id: string): Promise<string | undefined> {
  return (await runPass(store, id)).tag;
}

/** What each pass task of run `id` carries, from its view: its version's tag, its priority (0 when none) and pause key. */
export async function runPass(
  store: Store,
  id: string,
): Promise<{ tag: string | undefined; priority: number; pauseKey: string | null }> {
  const view = (await store.projectionGet({ name: RUN_VIEW, key: id })) as RunView | undefined;
  return {
    tag: view?.version ? versionTag(view.workflow, view.version) : undefined,
    priority: view?.priority ?? 0,
    pauseKey: view?.pauseKey ?? null,
  };
}

/** The keys of a run's step pages: `<run id>#<page>` (the page number after the last `#` keeps ids with `#` apart). */
export function pageKeys(id: string, pages: number): string[] {
  return Array.from({ length: pages }, (_, page) => `${id}#${page}`);
}

/**
 * Moves a view's ended steps to a page of their own once it holds PAGE_STEPS of them (an ended
 * step never changes again); the view keeps the steps still running or retrying.
 */
function pageOut(id: string, view: RunView): Array<{ key: string; value: StepView[] }> {
  const ended = view.steps.filter((s) => ENDED.has(s.status));
  if (ended.length < PAGE_STEPS) return [];
  view.steps = view.steps.filter((s) => !ENDED.has(s.status));
  const page = view.stepPages ?? 0;
  view.stepPages = page + 1;
  return [{ key: `${id}#${page}`, value: ended }];
}

const ENDED = new Set<StepStatus>(['success', 'failed', 'timed_out']);

/**
 * A stored `run` projection value as a RunView: a view written by an earlier version says
 * `succeeded` / `ok` / `error`, and is read in today's words (it is rewritten at its next event).
 */
export function runView(value: unknown): RunView | undefined {
  const view = value as RunView | undefined;
  if (!view) return undefined;
  view.status = currentStatus(view.status) as RunStatus;
  for (const step of view.steps) step.status = currentStatus(step.status) as StepStatus;
  return view;
}
