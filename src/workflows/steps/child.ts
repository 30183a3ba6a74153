import { CancelledError, TerminalError } from '../../errors.js';
import type { Workflow, WorkflowContext } from '../../runtime/workflow.js';
import type { Definitions } from '../definitions.js';
import type { ExecutionInput } from '../interpreter.js';
import { isTemplate } from '../templates.js';
import { rateLimitOf } from '../flow.js';
import { mask } from '../mask.js';
import type { LeafStep } from '../schema.js';
import { act, finish, type StoredRun } from './run.js';

type ChildStep = Extract<LeafStep, { type: 'workflow' | 'function' }>;

/** What a `workflow` step starts: a stored workflow's execution, or a code workflow's run, by name. */
export interface ChildWorkflows {
  /** The input of an execution of the stored workflow with this id or name (its current version), given trigger data. */
  stored(ref: string, triggerData: unknown): Promise<ExecutionInput>;
  /** The code workflow registered here as `name`, if any. */
  code(name: string): Workflow | undefined;
}

/** What the step journals before the child starts, so a replay starts the same child with the same input. */
interface Planned {
  kind: 'stored' | 'code' | 'function';
  name: string;
  input: unknown;
}

const CODE = 'code:';

/**
 * The ChildWorkflows of a service: stored workflows from `definitions` (their current version, which must be
 * enabled and not a template), code workflows from `registered` (the engine's `registered(name)`).
 *
 * @example storedWorkflow({ …, workflows: childWorkflows(definitions, (name) => engine.registered(name)) })
 */
export function childWorkflows(
  definitions: Pick<Definitions, 'resolve' | 'get'>,
  registered: (name: string) => Workflow | undefined,
): ChildWorkflows {
  return {
    code: registered,
    stored: async (ref, triggerData) => {
      const wf = await definitions.get(await definitions.resolve(ref));
      if (isTemplate(wf)) throw new TerminalError(`config.workflow: ${wf.name} is a template: instantiate it first`);
      if (!wf.enabled) throw new TerminalError(`config.workflow: workflow ${wf.name} is disabled`);
      if (typeof triggerData !== 'object' || triggerData === null || Array.isArray(triggerData))
        throw new TerminalError("config.input must render to a JSON object (the child execution's trigger data)");
      return {
        workflow_id: wf.id,
        workflow_name: wf.name,
        version: wf.version,
        steps: wf.steps,
        trigger_type: 'workflow',
        trigger_data: triggerData as Record<string, unknown>,
        ...(wf.states ? { states: wf.states } : {}),
        ...(wf.on_error ? { on_error: wf.on_error } : {}),
        ...(wf.messages ? { messages: wf.messages } : {}),
        ...(wf.timeout_seconds ? { timeout_seconds: wf.timeout_seconds } : {}),
      };
    },
  };
}

/**
 * A child run (`ctx.child`) of a stored workflow (by id or name: an execution of its current version), of a code
 * workflow (`code:<name>`), or (a `function` step) of a function's newest version; the step's output is the child's.
 * The child's input is worked out in a step of its own (`<id>:start`), so a replay starts the same version without
 * looking anything up. The child fails → the step fails with its error.
 */
export async function childStep(
  run: StoredRun,
  ctx: WorkflowContext,
  step: ChildStep,
  rendered: unknown,
  problem: unknown,
): Promise<unknown> {
  const children = run.options.workflows;
  let planned: Planned;
  try {
    planned = await plan(run, ctx, step, rendered, problem);
  } catch (error) {
    if (error instanceof CancelledError) throw error;
    // the step's own record says why no child started
    return finish(run, ctx, step, () => Promise.reject(error));
  }
  const workflow =
    planned.kind === 'stored'
      ? run.workflow
      : planned.kind === 'function'
        ? run.options.functions?.workflow
        : children?.code(planned.name);
  if (!workflow)
    return finish(run, ctx, step, () =>
      Promise.reject(new TerminalError(`config.workflow: no code workflow '${planned.name}' is registered here`)),
    );
  let output: unknown;
  let failure: unknown = null;
  try {
    output = await ctx.child(workflow, planned.input, { id: childId(run, step.id) });
  } catch (error) {
    if (error instanceof CancelledError) throw error;
    failure = error;
  }
  return finish(run, ctx, step, async () => {
    if (failure !== null) throw new TerminalError(`child run ${childId(run, step.id)} failed: ${message(failure)}`);
    return mask(output, run.hidden);
  });
}

/** The child to start, journaled (`<id>:start`): a replay starts the same version with the same input. */
function plan(
  run: StoredRun,
  ctx: WorkflowContext,
  step: ChildStep,
  rendered: unknown,
  problem: unknown,
): Promise<Planned> {
  const children = run.options.workflows;
  const config = rendered as { workflow: string; input?: unknown } | undefined;
  const { functions } = run.options;
  return ctx.step(
    `${step.id}:start`,
    () =>
      act(run, problem, async (): Promise<Planned> => {
        if (step.type === 'function') {
          if (!functions) throw new TerminalError('function steps are off here: the interpreter has no functions');
          const called = rendered as { function: string; input?: unknown };
          return {
            kind: 'function',
            name: called.function,
            input: await functions.input(called.function, called.input),
          };
        }
        if (!children)
          throw new TerminalError('workflow steps are off here: the interpreter has no workflows to start');
        const ref = config!.workflow;
        if (ref.startsWith(CODE)) {
          const name = ref.slice(CODE.length);
          if (!children.code(name))
            throw new TerminalError(`config.workflow: no code workflow '${name}' is registered`);
          return { kind: 'code', name, input: config!.input ?? null };
        }
        const input = await children.stored(ref, config!.input ?? {});
        return { kind: 'stored', name: input.workflow_id, input };
      }),
    {
      retry: { maxAttempts: 1 },
      input: problem === null ? mask(rendered, run.hidden) : null,
      // a function step takes its rate limits as it starts the function
      ...(step.type === 'function' ? rateLimitOf(step) : {}),
    },
  ) as Promise<Planned>;
}

/** A child's run id: the execution's and the step's (and, in a map, the item's) — one child per step and item. */
export function childId(run: StoredRun, stepId: string): string {
  return `${run.executionId}:${stepId}${run.item === undefined ? '' : `#${run.item}`}`;
}

function message(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
