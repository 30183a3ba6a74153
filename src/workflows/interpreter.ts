import { RetryAfterError, TerminalError } from '../errors.js';
import { workflow, type RetryPolicy, type Workflow } from '../runtime/workflow.js';
import { ACTIONS, type LogLine } from './actions/index.js';
import { mask, maskText } from './mask.js';
import type { Definition, StepDefinition } from './schema.js';
import type { Secrets } from './secrets.js';
import { render, type Scope } from './template/render.js';

/** The one code workflow that runs every stored definition: each definition step is one durable step. */
export const STORED_WORKFLOW = 'runledger.stored';

/** A run of STORED_WORKFLOW carries the definition it started with, so an update never changes a running execution. */
export interface ExecutionInput {
  workflow_id: string;
  version: number;
  steps: Definition['steps'];
  trigger_type: string;
  trigger_data: Record<string, unknown>;
  /** A rerun: the execution it reran. */
  rerun_of?: string;
}

export interface InterpreterOptions {
  secrets: Secrets;
  allow: string[];
  log(line: LogLine): void;
}

/**
 * The interpreter of stored workflows. Configs are rendered at each pass from the trigger, the
 * journaled outputs of earlier steps and the secrets; secret values are masked (`***`) in every
 * step input, output and error before the journal sees them, so the journal holds none.
 */
export function storedWorkflow(options: InterpreterOptions): Workflow<ExecutionInput, Record<string, unknown>> {
  return workflow(STORED_WORKFLOW, async (ctx, input) => {
    const secrets = await options.secrets.values();
    const hidden = Object.values(secrets);
    const steps: Scope['steps'] = {};
    for (const step of input.steps) {
      const scope: Scope = { trigger: input.trigger_data, steps, secrets, execution: { id: ctx.runId }, workflow: { id: input.workflow_id } };
      let config: unknown;
      let problem: unknown = null;
      try {
        config = render(step.config, scope);
      } catch (error) {
        problem = error;
      }
      const output = await ctx.step(
        step.id,
        async (stepCtx) => {
          // a template that cannot render will not render on a retry either
          if (problem !== null) throw masked(problem, hidden, true);
          try {
            const run = ACTIONS[step.type] as (config: unknown, ctx: Parameters<(typeof ACTIONS)['log']>[1]) => Promise<unknown>;
            const log = (line: LogLine) => options.log({ ...line, message: maskText(line.message, hidden) });
            const context = { ...stepCtx, executionId: ctx.runId, workflowId: input.workflow_id, stepId: step.id, allow: options.allow, log };
            return mask(await run(config, context), hidden);
          } catch (error) {
            throw masked(error, hidden, false);
          }
        },
        { retry: retryPolicy(step), ...(step.timeout_seconds ? { timeout: step.timeout_seconds * 1000 } : {}), input: problem === null ? mask(config, hidden) : null },
      );
      steps[step.id] = { output };
    }
    return Object.fromEntries(Object.entries(steps).map(([id, s]) => [id, s.output]));
  });
}

function retryPolicy(step: StepDefinition): RetryPolicy {
  const retry = { max_attempts: 3, backoff_seconds: 1, backoff_rate: 2, ...step.retry };
  return { maxAttempts: retry.max_attempts, backoff: { base: retry.backoff_seconds * 1000, factor: retry.backoff_rate, max: 10 * 60_000 } };
}

/** The same kind of error (so the retry decision holds) with every secret value masked out of its message. */
function masked(error: unknown, hidden: string[], terminal: boolean): Error {
  const name = error instanceof Error ? error.name : 'Error';
  const message = maskText(error instanceof Error ? error.message : String(error), hidden);
  let out: Error;
  if (error instanceof RetryAfterError) out = new RetryAfterError(message, error.retryAfterMs);
  else if (terminal || error instanceof TerminalError) out = new TerminalError(name === 'TerminalError' ? message : `${name}: ${message}`);
  else out = Object.assign(new Error(message), { name });
  return out;
}
