import { z } from 'zod';
import { ValidationError, type Problem } from '../errors.js';
import { checkJson } from '../json.js';
import { projectedView, readRunView } from '../runtime/read/view.js';
import type { Store, StoredEvent } from '../storage/store.js';
import { truthy } from './steps/guard.js';
import { STORED_WORKFLOW, type ExecutionInput, type Reused } from './interpreter.js';
import { record, type ExecutionLink } from './record.js';
import { reuseForRerun } from './rerun.js';
import type { Definition } from './schema.js';
import { stepReferences, templateProblems, usesRoot } from './template/parse.js';
import { render, type Scope } from './template/render.js';
import { rerunTimeouts } from './timeouts.js';

/** The most automatic reruns one failure chain may take: a fallback that keeps failing stops there. */
export const MAX_FALLBACKS = 5;
/** What the record and the journal call the rule that started an automatic rerun. */
export const FALLBACK_RULE = 'on_failure';

/**
 * A definition's automatic fallback (brief 004 §6.2, §7.2): when an execution fails (in one of
 * `states`, if given, and `when` renders truthy), the engine reruns it from `rerun_from`, as a manual
 * rerun would, with `trigger_data` merged over the failed execution's and `timeouts` overriding step
 * timeouts; at most `max` times in a row.
 */
export const onFailureSchema = z
  .object({
    rerun_from: z
      .string()
      .min(1)
      .max(64)
      .describe('The top-level step the rerun starts at; the steps before it are reused'),
    trigger_data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Merged over the failed execution\'s trigger data (e.g. { "mode": "rule_only" })'),
    timeouts: z
      .record(z.string(), z.union([z.string(), z.number()]))
      .optional()
      .describe('Step timeouts of the rerun, by step id, as a manual rerun takes them ("10m", 90)'),
    states: z
      .array(z.string().min(1).max(64))
      .min(1)
      .max(100)
      .optional()
      .describe('Only when the execution failed in one of these states (from states.names)'),
    when: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .describe(
        'Only when this template renders truthy: it reads trigger, steps.<id>.output/.error/.status and execution.error/.state',
      ),
    max: z
      .int()
      .min(1, 'must be at least 1')
      .max(MAX_FALLBACKS, `must be at most ${MAX_FALLBACKS} (automatic reruns in a row)`)
      .default(1)
      .describe(`Automatic reruns in a row, 1 to ${MAX_FALLBACKS}`),
  })
  .strict()
  .describe('Rerun automatically when an execution fails');

export type OnFailure = z.output<typeof onFailureSchema>;

/**
 * What is wrong with a definition's `on_failure` that its shape cannot say, each problem with its
 * path (`on_failure.rerun_from`): a step that is not a top-level step, a timeout `rerunTimeouts`
 * refuses, a state not in `states.names`, a `when` that does not parse or reads what a failed
 * execution does not have (a secret, a callback, a step that does not exist).
 */
export function fallbackProblems(definition: Definition): Problem[] {
  const rule = definition.on_failure;
  if (!rule) return [];
  const problems: Problem[] = [];
  const top = definition.steps.map((s) => s.id);
  if (!top.includes(rule.rerun_from))
    problems.push({
      path: 'on_failure.rerun_from',
      message: `'${rule.rerun_from}' is not a top-level step of this workflow (${top.join(', ')})`,
    });
  if (rule.timeouts) {
    try {
      rerunTimeouts(definition.steps, rule.timeouts);
    } catch (error) {
      if (!(error instanceof ValidationError)) throw error;
      problems.push(...error.problems.map((p) => ({ ...p, path: `on_failure.${p.path}` })));
    }
  }
  rule.states?.forEach((state, i) => {
    const names = definition.states?.names;
    if (!names?.includes(state))
      problems.push({
        path: `on_failure.states[${i}]`,
        message: names
          ? `'${state}' is not one of states.names (${names.join(', ')})`
          : `names state '${state}', but the workflow declares no states (add states.names)`,
      });
  });
  if (rule.when !== undefined) {
    const path = 'on_failure.when';
    problems.push(...templateProblems(rule.when, path));
    for (const root of ['secrets', 'callback'])
      if (usesRoot(rule.when, root))
        problems.push({ path, message: `{{${root}.…}} cannot be read here: it reads the failed execution's record` });
    const ids = new Set(
      definition.steps.flatMap((s) =>
        s.type === 'parallel' ? [s.id, ...Object.values(s.config.branches).flatMap((l) => l.map((b) => b.id))] : [s.id],
      ),
    );
    for (const ref of stepReferences(rule.when))
      if (!ids.has(ref)) problems.push({ path, message: `refers to steps.${ref}, which does not exist` });
  }
  return problems;
}

/** The automatic rerun of a failed execution: what `Executions` starts in the transaction that journals the failure. */
export interface Fallback {
  input: ExecutionInput;
  reuse: Record<string, Reused>;
  link: ExecutionLink;
}

/**
 * The fallback a `run.failed` event calls for, read in its transaction `tx`, or null: the run is not
 * an execution with `on_failure`, it failed outside `states`, `when` is falsy (or does not render),
 * the chain of automatic reruns has had `max`, or the steps before `rerun_from` did not all succeed
 * (there is nothing to reuse). Never throws for any of those: it runs inside the commit of the
 * failure, which other runs' writes share.
 */
export async function fallbackFor(tx: Store, event: StoredEvent, maxPayloadBytes: number): Promise<Fallback | null> {
  const id = event.streamId.slice('run:'.length);
  // the view this append left, without a query: most failures are not executions with a fallback
  const quick = projectedView(tx, id);
  const declared = quick ? quick.workflow === STORED_WORKFLOW && (quick.input as ExecutionInput).on_failure : true;
  if (!declared) return null;
  const view = await readRunView(tx, id);
  if (!view || view.workflow !== STORED_WORKFLOW || view.status !== 'failed') return null;
  const input = view.input as ExecutionInput;
  const rule = input.on_failure;
  if (!rule) return null;
  const before = input.rerun_of?.fallback;
  const attempt = before ? before.attempt + 1 : 1;
  if (attempt > Math.min(rule.max, MAX_FALLBACKS)) return null;
  if (rule.states && !(view.state && rule.states.includes(view.state))) return null;
  const failed = record(view);
  if (rule.when !== undefined && !holds(rule.when, failed, view.error)) return null;
  let reuse: Record<string, Reused>;
  let steps = input.steps;
  let seconds: Record<string, number> | undefined;
  const trigger = { ...input.trigger_data, ...rule.trigger_data };
  try {
    reuse = reuseForRerun(failed, input, rule.rerun_from);
    checkJson('trigger_data', trigger, maxPayloadBytes);
    if (rule.timeouts && Object.keys(rule.timeouts).length > 0)
      ({ steps, seconds } = rerunTimeouts(input.steps, rule.timeouts));
  } catch (error) {
    if (error instanceof ValidationError) return null;
    throw error;
  }
  const link: ExecutionLink = {
    execution_id: id,
    from_step: rule.rerun_from,
    ...(seconds ? { timeouts_seconds: seconds } : {}),
    fallback: { rule: FALLBACK_RULE, attempt, max: rule.max },
  };
  return { input: { ...input, trigger_data: trigger, steps }, reuse, link };
}

/** Whether `when` renders truthy over the failed execution's record; one that does not render is false. */
function holds(when: string, failed: ReturnType<typeof record>, error: string | null): boolean {
  const steps = Object.fromEntries(
    failed.steps.map((s) => [s.step_id, { output: s.output, error: s.error, status: s.status }]),
  );
  const execution = { id: failed.execution_id, error, state: failed.state };
  const scope: Scope = {
    trigger: failed.trigger_data,
    steps,
    secrets: {},
    execution,
    workflow: { id: failed.workflow_id },
  };
  try {
    return truthy(render(when, scope));
  } catch {
    return false;
  }
}
