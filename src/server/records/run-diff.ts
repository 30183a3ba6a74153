import { z } from 'zod';
import { iso } from '../../iso.js';
import { type RunDiff, runDuration, type StepDiff } from '../../runtime/read/diff.js';
import type { RunView, StepView } from '../../runtime/read/view.js';
import { runSummary, runSummaryResponse } from './runs.js';

/* Two runs side by side as the API shows them (`GET /runs/{a}/diff/{b}`), built from `diffRuns`. */

const STEP_FIELDS = ['status', 'attempts', 'input', 'output', 'error', 'duration'] as const;
const RUN_FIELDS = ['workflow', 'version', 'status', 'state', 'input', 'output', 'error', 'duration'] as const;

const stepSide = z
  .object({
    seq: z.union([z.int(), z.string()]).describe("the call's position in its run"),
    status: z.enum(['running', 'retrying', 'success', 'failed', 'timed_out']),
    attempts: z.int(),
    started_at: z.iso.datetime(),
    duration_ms: z.number().nullable(),
    input: z.unknown(),
    output: z.unknown(),
    error: z.string().nullable(),
  })
  .nullable()
  .describe('the step in this run; null: the run has no such step');

const runSide = runSummaryResponse.extend({
  input: z.unknown(),
  output: z.unknown(),
  state: z.string().nullable(),
  duration_ms: z.number().nullable().describe('from its start to its end; null while it runs'),
});

export const runDiffResponse = z.object({
  a: runSide,
  b: runSide,
  same: z.boolean().describe('nothing differs: not the runs, not a step'),
  differs: z.array(z.enum(RUN_FIELDS)).describe('what differs between the runs themselves'),
  counts: z.object({ same: z.int(), changed: z.int(), added: z.int(), removed: z.int() }),
  steps: z
    .array(
      z.object({
        change: z
          .enum(['same', 'changed', 'added', 'removed'])
          .describe('added: in b only; removed: in a only; changed: in both, differs says what'),
        name: z.string(),
        differs: z.array(z.enum(STEP_FIELDS)),
        a: stepSide,
        b: stepSide,
      }),
    )
    .describe(
      'the steps of both runs in call order, aligned by name (and parallel branch) as a text diff aligns lines',
    ),
});

export type RunDiffRecord = z.infer<typeof runDiffResponse>;

/**
 * `diff` as the API answers it; `names`: stored workflows' names by id (`storedNames`), so an execution shows its
 * workflow's name.
 *
 * @example runDiffRecord(diffRuns(a, b), await storedNames(definitions, [a, b]))
 */
export function runDiffRecord(diff: RunDiff, names?: ReadonlyMap<string, string>): RunDiffRecord {
  const side = (view: RunView) => ({
    ...runSummary(view, undefined, names),
    input: view.input,
    output: view.output,
    state: view.state ?? null,
    duration_ms: runDuration(view),
  });
  const counts = { same: 0, changed: 0, added: 0, removed: 0 };
  for (const step of diff.steps) counts[step.change]++;
  return {
    a: side(diff.a),
    b: side(diff.b),
    same: diff.differs.length === 0 && counts.same === diff.steps.length,
    differs: diff.differs,
    counts,
    steps: diff.steps.map((s: StepDiff) => ({
      change: s.change,
      name: s.name,
      differs: s.differs,
      a: s.a && stepRecord(s.a),
      b: s.b && stepRecord(s.b),
    })),
  };
}

function stepRecord(step: StepView) {
  return {
    seq: step.seq,
    status: step.status,
    attempts: step.attempts,
    started_at: iso(step.startedAt),
    duration_ms: step.durationMs,
    input: step.input,
    output: step.output,
    error: step.error,
  };
}
