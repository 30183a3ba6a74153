import { ValidationError } from '../errors.js';
import type { ExecutionInput, Reused } from './interpreter.js';
import type { ExecutionRecord, StepRecord } from './record.js';

/**
 * What a rerun from `fromStep` reuses: the recorded output of every step before it (branch steps
 * of an earlier parallel step included). Each of them must have succeeded.
 */
export function reuseForRerun(
  original: ExecutionRecord,
  input: ExecutionInput,
  fromStep: string,
): Record<string, Reused> {
  const index = input.steps.findIndex((s) => s.id === fromStep);
  if (index < 0) {
    const ids = input.steps.map((s) => s.id).join(', ');
    throw new ValidationError('from_step', `'${fromStep}' is not a top-level step of this execution (${ids})`);
  }
  const before = new Set(input.steps.slice(0, index).map((s) => s.id));
  const reuse: Record<string, Reused> = {};
  for (const step of original.steps) {
    if (
      step.type === 'parallel' ||
      !(before.has(step.step_id) || (step.parallel !== undefined && before.has(step.parallel)))
    )
      continue;
    if (step.status !== 'success')
      throw new ValidationError(
        'from_step',
        `step '${step.step_id}' before '${fromStep}' did not succeed (${step.status}): rerun from it or from an earlier step`,
      );
    reuse[step.step_id] = { output: step.output };
  }
  return reuse;
}

/**
 * What a retry of failed branches reuses: every step that succeeded, except in the branches retried
 * (they run from their start); a failed branch not retried keeps its failure.
 */
export function reuseForRetry(
  original: ExecutionRecord,
  _input: ExecutionInput,
  wanted: string[] | undefined,
): { reuse: Record<string, Reused>; branches: string[] } {
  const failed = new Map<string, string>();
  for (const step of original.steps) {
    if (step.type !== 'parallel' || !step.branches) continue;
    for (const [branch, outcome] of Object.entries(step.branches))
      if (outcome.status !== 'success') failed.set(branch, step.step_id);
  }
  if (failed.size === 0)
    throw new ValidationError(
      'branches',
      `execution ${original.execution_id} has no failed branch to retry (rerun it from a step instead)`,
    );
  const branches = wanted ?? [...failed.keys()];
  branches.forEach((b, i) => {
    if (!failed.has(b))
      throw new ValidationError(
        `branches[${i}]`,
        `'${b}' is not a failed branch (failed: ${[...failed.keys()].join(', ')})`,
      );
  });
  const retried = (step: StepRecord) =>
    step.branch !== undefined && branches.includes(step.branch) && failed.get(step.branch) === step.parallel;
  const reuse: Record<string, Reused> = {};
  for (const step of original.steps) {
    if (step.type === 'parallel' || retried(step)) continue;
    if (step.status === 'success') reuse[step.step_id] = { output: step.output };
    else if (step.branch !== undefined && step.error !== null) reuse[step.step_id] = { error: step.error };
  }
  return { reuse, branches };
}
