import { CancelledError } from '../../errors.js';
import type { WorkflowContext } from '../../runtime/workflow.js';
import type { StepDefinition } from '../schema.js';
import { failureState } from '../state.js';
import { PartialStop, runSteps, type StoredRun } from './run.js';

type ParallelStep = Extract<StepDefinition, { type: 'parallel' }>;

/** How one branch ended: the outputs of its steps, or the step it failed at and why. */
export type BranchOutcome =
  | { status: 'success'; outputs: Record<string, unknown> }
  | { status: 'failed'; step: string; error: string };

/**
 * Runs the branches side by side (`ctx.parallel`: each branch's calls are numbered on their own) and
 * waits for every one. All succeeded: the output is each branch's outcome. Some failed: the
 * execution stops here and ends `partial_success` (PartialStop). All failed: the step fails with the
 * first branch's error, its failure state from the parallel step's rules, else the failing step's.
 */
export async function runParallel(
  run: StoredRun,
  ctx: WorkflowContext,
  step: ParallelStep,
): Promise<Record<string, BranchOutcome>> {
  const failedAt: Record<string, StepDefinition> = {};
  const branches = Object.fromEntries(
    Object.entries(step.config.branches).map(([name, steps]) => [
      name,
      async (branchCtx: WorkflowContext) => {
        for (const inner of steps) {
          try {
            await runSteps(run, branchCtx, [inner], true);
          } catch (error) {
            failedAt[name] = inner;
            throw error;
          }
        }
        return Object.fromEntries(steps.map((s) => [s.id, run.outputs[s.id]?.output ?? null]));
      },
    ]),
  );
  const results = await ctx.parallel(step.id, branches);
  const outcome: Record<string, BranchOutcome> = {};
  const errors: { branch: string; error: Error }[] = [];
  for (const [name, result] of Object.entries(results)) {
    if (result.status === 'success') outcome[name] = { status: 'success', outputs: result.output };
    else {
      errors.push({ branch: name, error: result.error });
      outcome[name] = {
        status: 'failed',
        step: failedAt[name]?.id ?? name,
        error: `${result.error.name}: ${result.error.message}`,
      };
    }
  }
  const cancelled = errors.find((e) => e.error instanceof CancelledError);
  if (cancelled) throw cancelled.error;
  if (errors.length === 0) return outcome;
  if (errors.length < Object.keys(results).length) throw new PartialStop(step.id, outcome);
  // every branch failed: the first branch's error stands for the step (the record shows each one's)
  const [first] = errors;
  const state = failureState(first!.error, [step.on_error, failedAt[first!.branch]?.on_error], undefined);
  throw state ? Object.assign(first!.error, { failureState: state }) : first!.error;
}
