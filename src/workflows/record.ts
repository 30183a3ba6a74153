import { iso } from '../iso.js';
import { type CancelView, isTerminal, type RunStatus, type RunView, type StepView } from '../runtime/read/view.js';
import type { ExecutionInput } from './interpreter.js';
import { executionMessages } from './messages.js';
import { etaSeconds, type StepStats } from './progress.js';
import type { StepDefinition } from './schema.js';
import { storedSpelling } from './steps/generate-config.js';

export type ExecutionStatus = 'pending' | 'running' | 'success' | 'partial_success' | 'failed' | 'cancelled';
export type StepStatus = 'pending' | 'running' | 'success' | 'failed' | 'skipped' | 'timed_out' | 'cancelled';

export interface StepRecord {
  step_id: string;
  type: string;
  status: StepStatus;
  attempts: number;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
  input: unknown;
  output: unknown;
  error: string | null;
  /** A failed step: what a person is told, from the definition's `messages.errors` by the error's class. */
  message?: string;
  /** A poll step's cancel, once sent: confirming, confirmed or not (brief §8.1; see CancelView). */
  cancel?: CancelView;
  /** A step of a parallel step's branch: the parallel step's id and the branch's name. */
  parallel?: string;
  branch?: string;
  /** A parallel step: how each branch ended. */
  branches?: Record<string, { status: StepStatus; error: string | null }>;
}

export interface ExecutionSummary {
  workflow_id: string;
  execution_id: string;
  workflow_version: number;
  status: ExecutionStatus;
  trigger_type: string;
  /** When the execution was requested (triggered). */
  created_at: string;
  /** When its first step started: null while it is queued (the 002 brief's `started_at: str | None`). */
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
}

/** A rerun or retry of an execution, seen from either end. */
export interface ExecutionLink {
  execution_id: string;
  from_step?: string;
  branches?: string[];
  /** A rerun's step timeouts in seconds, overriding the definition's (a poll's max_wait_seconds, another step's timeout_seconds). */
  timeouts_seconds?: Record<string, number>;
  /** An automatic rerun (a definition's `on_failure`): the rule that started it, and which of its `max` reruns it is. */
  fallback?: { rule: string; attempt: number; max: number };
}

export interface ExecutionRecord extends ExecutionSummary {
  trigger_data: Record<string, unknown>;
  /** The business state the execution last entered, when the workflow names states. */
  state: string | null;
  /** The step running now, and what it says it does ("Rendering PowerPoint…"). */
  current_step: string | null;
  label: string | null;
  /** Steps ended, of all steps (branch steps count one each). */
  progress: { done: number; total: number };
  /** Seconds left by the median durations of this workflow's earlier steps; null until every remaining step has some. */
  eta_seconds: number | null;
  rerun_of: ExecutionLink | null;
  reruns: ExecutionLink[];
  steps: StepRecord[];
  /** What a person is told (the definition's `messages`): by its state, else by its failed step's error class; beside the technical `error`. */
  message: string | null;
  /** Why it was cancelled, as the first cancel request said ('cancelled' when it gave none; null: never asked); read apart from the run's view. */
  cancel_reason?: string | null;
  /** Who asked to cancel it: `user` (API, CLI, dashboard, an operator), `system` (its `timeout_seconds`); null: never asked. */
  cancelled_by?: 'user' | 'system' | null;
}

export const STATUS: Record<RunStatus, ExecutionStatus> = {
  pending: 'pending',
  running: 'running',
  sleeping: 'running',
  waiting: 'running',
  success: 'success',
  partial_success: 'partial_success',
  failed: 'failed',
  cancelled: 'cancelled',
};
const ENDED = new Set<StepStatus>(['success', 'failed', 'skipped', 'timed_out', 'cancelled']);

/** The execution record of a run of the interpreter: every definition step (branch steps after their parallel step), run or not. */
export function record(view: RunView, extra: { stats?: StepStats; reruns?: ExecutionLink[] } = {}): ExecutionRecord {
  const input = view.input as ExecutionInput;
  const terminal = isTerminal(view.status);
  const messages = executionMessages(view);
  const leaf = (step: StepDefinition, where: { parallel?: string; branch?: string } = {}): StepRecord => {
    // a callback step whose request failed for good ended there: the request's failure is the step's
    const ran =
      view.steps.find((s) => s.name === step.id) ??
      view.steps.find((s) => s.name === `${step.id}:request` && s.status === 'failed');
    if (!ran) {
      // a callback step is under way once its request was sent (or, without one, while the run waits for it)
      const waiting = step.type === 'wait_for_callback' && view.steps.some((s) => s.name === `${step.id}:request`);
      const status: StepStatus = !terminal
        ? waiting
          ? 'running'
          : 'pending'
        : view.status === 'cancelled'
          ? 'cancelled'
          : 'skipped';
      return {
        step_id: step.id,
        type: step.type,
        status,
        attempts: 0,
        started_at: null,
        finished_at: null,
        duration_ms: null,
        input: null,
        output: null,
        error: null,
        ...where,
      };
    }
    const message = messages.step(ran);
    return {
      step_id: step.id,
      type: step.type,
      status: stepStatus(ran, terminal, view.status),
      attempts: ran.attempts,
      started_at: iso(ran.startedAt),
      finished_at: iso(ran.finishedAt),
      duration_ms: ran.durationMs,
      // a model call's record reads as the stored workflows spell it (its journal holds the code face's Generation)
      input: step.type === 'generate' ? storedSpelling(ran.input) : ran.input,
      output: step.type === 'generate' ? storedSpelling(ran.output) : ran.output,
      error: ran.error,
      ...(message === undefined ? {} : { message }),
      ...(ran.cancel ? { cancel: ran.cancel } : {}),
      ...where,
    };
  };
  const steps: StepRecord[] = [];
  for (const step of input.steps) {
    if (step.type !== 'parallel') {
      steps.push(leaf(step));
      continue;
    }
    const inner = Object.entries(step.config.branches).map(([branch, list]) => ({
      branch,
      records: list.map((s) => leaf(s, { parallel: step.id, branch })),
    }));
    steps.push(parallelRecord(step, inner, terminal));
    for (const { records } of inner) steps.push(...records);
  }
  const leaves = steps.filter((s) => s.type !== 'parallel');
  const current = view.current ? (steps.find((s) => s.step_id === view.current!.name) ?? null) : null;
  const label = view.current?.label ?? labelOf(input.steps, current?.step_id) ?? null;
  return {
    workflow_id: input.workflow_id,
    execution_id: view.id,
    workflow_version: input.version,
    status: STATUS[view.status],
    trigger_type: input.trigger_type,
    trigger_data: input.trigger_data,
    state: view.state ?? null,
    current_step: current?.step_id ?? null,
    label,
    progress: { done: leaves.filter((s) => ENDED.has(s.status)).length, total: leaves.length },
    eta_seconds: terminal ? 0 : etaSeconds(input.steps, steps, extra.stats),
    rerun_of: input.rerun_of ?? null,
    reruns: extra.reruns ?? [],
    steps,
    message: messages.execution(STATUS[view.status], view.state ?? null, steps),
    created_at: iso(view.createdAt),
    started_at: firstStart(view),
    finished_at: terminal ? iso(view.updatedAt) : null,
    error: view.error,
  };
}

/** The execution really started when its first step did (a callback's request counts); before that it was only queued. */
function firstStart(view: RunView): string | null {
  const starts = view.steps.map((s) => s.startedAt).filter((t): t is number => typeof t === 'number');
  return starts.length > 0 ? iso(Math.min(...starts)) : null;
}

function stepStatus(ran: StepView, terminal: boolean, runStatus: RunStatus): StepStatus {
  switch (ran.status) {
    case 'success':
      return 'success';
    case 'timed_out':
      return 'timed_out';
    case 'failed':
      return /^(StepTimedOutError|TimeoutError):/.test(ran.error ?? '') ? 'timed_out' : 'failed';
    default:
      // a step that was running or waiting to retry when the execution ended did not finish
      if (!terminal) return 'running';
      return runStatus === 'cancelled' ? 'cancelled' : 'failed';
  }
}

/** A parallel step: success when every branch succeeded, failed when any ended otherwise, running meanwhile. */
function parallelRecord(
  step: StepDefinition,
  inner: { branch: string; records: StepRecord[] }[],
  terminal: boolean,
): StepRecord {
  const branches: NonNullable<StepRecord['branches']> = {};
  for (const { branch, records } of inner) {
    const bad = records.find((r) => r.status === 'failed' || r.status === 'timed_out' || r.status === 'cancelled');
    const status: StepStatus = bad
      ? bad.status
      : records.every((r) => r.status === 'success')
        ? 'success'
        : records.some((r) => r.status !== 'pending')
          ? 'running'
          : terminal
            ? 'skipped'
            : 'pending';
    branches[branch] = { status, error: bad?.error ?? null };
  }
  const all = Object.values(branches);
  const started = inner.flatMap((i) => i.records).filter((r) => r.started_at !== null);
  const ended = inner.flatMap((i) => i.records).filter((r) => r.finished_at !== null);
  const status: StepStatus = all.every((b) => b.status === 'success')
    ? 'success'
    : all.some((b) => b.status === 'running' || (b.status === 'pending' && started.length > 0))
      ? 'running'
      : all.some((b) => b.status === 'failed' || b.status === 'timed_out' || b.status === 'cancelled')
        ? all.some((b) => b.status === 'cancelled')
          ? 'cancelled'
          : 'failed'
        : all.every((b) => b.status === 'skipped')
          ? 'skipped'
          : 'pending';
  const first = started.map((r) => r.started_at!).sort()[0] ?? null;
  const last =
    status === 'running' || status === 'pending'
      ? null
      : (ended
          .map((r) => r.finished_at!)
          .sort()
          .at(-1) ?? null);
  const output = Object.fromEntries(
    inner.map(({ branch, records }) => [branch, Object.fromEntries(records.map((r) => [r.step_id, r.output]))]),
  );
  return {
    step_id: step.id,
    type: 'parallel',
    status,
    attempts: started.length > 0 ? 1 : 0,
    started_at: first,
    finished_at: last,
    duration_ms: first && last ? Date.parse(last) - Date.parse(first) : null,
    input: null,
    output,
    error: Object.values(branches).find((b) => b.error)?.error ?? null,
    branches,
  };
}

function labelOf(steps: StepDefinition[], id: string | undefined): string | undefined {
  if (id === undefined) return undefined;
  for (const step of steps) {
    if (step.id === id) return step.label;
    if (step.type === 'parallel')
      for (const list of Object.values(step.config.branches)) for (const s of list) if (s.id === id) return s.label;
  }
  return undefined;
}
