import { isDeepStrictEqual } from 'node:util';
import { isTerminal, type RunView, type StepView } from './view.js';

/** What can differ between two aligned steps. */
export type StepField = 'status' | 'attempts' | 'input' | 'output' | 'error' | 'duration';
/** What can differ between the two runs themselves. */
export type RunField = 'workflow' | 'version' | 'status' | 'state' | 'input' | 'output' | 'error' | 'duration';

/** `added`: in run b only; `removed`: in run a only; `changed`: in both, `differs` says what; `same`. */
export type StepChange = 'same' | 'changed' | 'added' | 'removed';

export interface StepDiff {
  change: StepChange;
  name: string;
  a: StepView | null;
  b: StepView | null;
  differs: StepField[];
}

export interface RunDiff {
  a: RunView;
  b: RunView;
  differs: RunField[];
  steps: StepDiff[];
}

/**
 * A duration differs when one is at least twice the other and they are 100 ms apart: two runs of the same code never
 * take the same time, and a step that took 3 ms once and 5 ms again is noise, not news.
 */
const SLOWER = 2;
const APART_MS = 100;
/** The most cells of the alignment's table (4 MB): past it, the steps between the common ends are shown as removed, then added. */
const MAX_CELLS = 1_000_000;

/**
 * Two runs aligned step by step, in call order, with what differs: a step is matched to the step of the same name (in
 * the same parallel branch) at the same place in the sequence of calls, as a text diff matches lines; a step of one
 * run only is `added` or `removed`. Values are compared as JSON; a step one run reused from an earlier run (its input
 * `{ reused_from }`) did no work, so its input and duration are not compared.
 *
 * @example diffRuns(await engine.runs.view('run_a'), await engine.runs.view('run_b')).steps.filter((s) => s.change !== 'same')
 */
export function diffRuns(a: RunView, b: RunView): RunDiff {
  const differs: RunField[] = [];
  const field = (f: RunField, same: boolean) => {
    if (!same) differs.push(f);
  };
  field('workflow', a.workflow === b.workflow);
  field('version', (a.version ?? null) === (b.version ?? null));
  field('status', a.status === b.status);
  field('state', (a.state ?? null) === (b.state ?? null));
  field('input', isDeepStrictEqual(a.input, b.input));
  field('output', isDeepStrictEqual(a.output, b.output));
  field('error', a.error === b.error);
  field('duration', !durationsDiffer(runDuration(a), runDuration(b)));
  return { a, b, differs, steps: alignSteps(a.steps, b.steps).map(([x, y]) => stepDiff(x, y)) };
}

/** A run's time from its start to its end; null while it has not ended. */
export function runDuration(view: RunView): number | null {
  return isTerminal(view.status) ? view.updatedAt - view.createdAt : null;
}

/**
 * The steps of two runs in pairs, in call order: `[x, y]` matched, `[x, null]` in a only, `[null, y]` in b only. The
 * longest common sequence of step keys (name and branch), after the ends both share are set aside.
 */
export function alignSteps(a: StepView[], b: StepView[]): Array<[StepView | null, StepView | null]> {
  const ka = a.map(stepKey);
  const kb = b.map(stepKey);
  let head = 0;
  while (head < a.length && head < b.length && ka[head] === kb[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && ka[a.length - 1 - tail] === kb[b.length - 1 - tail])
    tail++;
  const pairs: Array<[StepView | null, StepView | null]> = a.slice(0, head).map((x, i) => [x, b[i]!]);
  const [endA, endB] = [a.length - tail, b.length - tail];
  pairs.push(...alignMiddle(a.slice(head, endA), b.slice(head, endB), ka.slice(head, endA), kb.slice(head, endB)));
  for (let i = tail; i > 0; i--) pairs.push([a[a.length - i]!, b[b.length - i]!]);
  return pairs;
}

/** The longest common subsequence of `a` and `b` by their keys `ka` and `kb`. */
function alignMiddle(
  a: StepView[],
  b: StepView[],
  ka: string[],
  kb: string[],
): Array<[StepView | null, StepView | null]> {
  const [n, m] = [a.length, b.length];
  if ((n + 1) * (m + 1) > MAX_CELLS)
    return [...a.map((x): [StepView, null] => [x, null]), ...b.map((y): [null, StepView] => [null, y])];
  // common[i * (m + 1) + j]: the length of the longest common sequence of a[i..] and b[j..]
  const common = new Uint32Array((n + 1) * (m + 1));
  const at = (i: number, j: number) => common[i * (m + 1) + j]!;
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      common[i * (m + 1) + j] = ka[i] === kb[j] ? at(i + 1, j + 1) + 1 : Math.max(at(i + 1, j), at(i, j + 1));
  const pairs: Array<[StepView | null, StepView | null]> = [];
  let [i, j] = [0, 0];
  while (i < n || j < m) {
    if (i < n && j < m && ka[i] === kb[j]) pairs.push([a[i++]!, b[j++]!]);
    else if (j >= m || (i < n && at(i + 1, j) >= at(i, j + 1))) pairs.push([a[i++]!, null]);
    else pairs.push([null, b[j++]!]);
  }
  return pairs;
}

/** A step's name within its parallel branch: `3.word.2` calls `fetch` → `word/fetch` (positions are not part of it). */
function stepKey(step: StepView): string {
  const branches = String(step.seq)
    .split('.')
    .filter((part) => !/^\d+$/.test(part));
  return [...branches, step.name].join('/');
}

function stepDiff(a: StepView | null, b: StepView | null): StepDiff {
  const name = (a ?? b)!.name;
  if (!a || !b) return { change: a ? 'removed' : 'added', name, a, b, differs: [] };
  const worked = !isReused(a) && !isReused(b);
  const differs: StepField[] = [];
  const field = (f: StepField, same: boolean) => {
    if (!same) differs.push(f);
  };
  field('status', a.status === b.status);
  field('attempts', a.attempts === b.attempts);
  field('input', !worked || isDeepStrictEqual(a.input, b.input));
  field('output', isDeepStrictEqual(a.output, b.output));
  field('error', a.error === b.error);
  field('duration', !worked || !durationsDiffer(a.durationMs, b.durationMs));
  return { change: differs.length > 0 ? 'changed' : 'same', name, a, b, differs };
}

function durationsDiffer(a: number | null, b: number | null): boolean {
  if (a === null || b === null) return a !== b;
  return Math.abs(a - b) >= APART_MS && Math.max(a, b) >= SLOWER * Math.min(a, b);
}

/** A retry or rerun journals a step it took from an earlier run with `input: { reused_from }`. */
function isReused(step: StepView): boolean {
  return typeof step.input === 'object' && step.input !== null && 'reused_from' in step.input;
}
