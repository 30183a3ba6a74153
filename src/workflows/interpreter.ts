import { CancelledError } from '../errors.js';
import { partialSuccess, workflow, type Workflow } from '../runtime/workflow.js';
import type { LogLine } from './actions/index.js';
import type { Cancellation } from './cancel-reason.js';
import type { StoredFlow } from './flow.js';
import type { Definition } from './schema.js';
import type { Secrets } from './secrets.js';
import type { ChildWorkflows } from './steps/child.js';
import type { StepModels } from './steps/generate.js';
import { enter, PartialStop, runSteps, type StoredRun } from './steps/run.js';

/** The one code workflow that runs every stored definition: each definition step is one durable call. */
export const STORED_WORKFLOW = 'runledger.stored';

/** What a rerun or retry takes from the execution it continues: a step's recorded output, or the error a step not retried failed with. */
export type Reused = { output: unknown } | { error: string };

/** A run of STORED_WORKFLOW carries the definition it started with, so an update never changes a running execution. */
export interface ExecutionInput {
  workflow_id: string;
  /** The stored workflow's name when the execution started: its metrics and logs carry it (observe/events.ts workflowLabel). */
  workflow_name?: string;
  version: number;
  steps: Definition['steps'];
  trigger_type: string;
  trigger_data: Record<string, unknown>;
  states?: Definition['states'];
  on_error?: Definition['on_error'];
  /** What a person is told by state and error class (read by the execution record, not by the steps). */
  messages?: Definition['messages'];
  timeout_seconds?: number;
  /** The business events that cancel it, as its definition says them (Executions renders each match at its start). */
  cancel_on?: Definition['cancel_on'];
  /** Rerun automatically when it fails (see fallback.ts). */
  on_failure?: Definition['on_failure'];
  /** Flow control, as its definition says it (Executions turns it into the run's start options; see flow.ts). */
  flow?: StoredFlow;
  /** The priority the execute request gave, over the definition's. */
  priority?: number;
  /** The flow keys resolved from the trigger data, which the run's limits read (`input.flow_keys.c0`). */
  flow_keys?: Record<string, string>;
  /** Steps this execution does not run again, by id (a rerun or a retry of failed branches). */
  reuse?: Record<string, Reused>;
  /** The execution this one reruns (`from_step`) or retries (`branches`). */
  rerun_of?: {
    execution_id: string;
    from_step?: string;
    branches?: string[];
    /** Set when the engine started it, not a person: the `on_failure` rule's, and which of its reruns this is. */
    fallback?: { rule: string; attempt: number; max: number };
  };
}

export interface InterpreterOptions {
  /** What a `function` step starts as a child run (functions/): the executor, and a run's input for a function name. */
  functions?: { workflow: Workflow; input(name: string, input: unknown): Promise<unknown> };
  /** What a `workflow` step starts as a child run (steps/child.ts); without it such a step fails, saying so. */
  workflows?: ChildWorkflows;
  secrets: Secrets;
  /** What a `generate` step's model is built with (app/ plugs in src/models/); without it such a step fails, saying so. */
  models?: StepModels;
  allow: string[];
  log(line: LogLine): void;
  /** The one-time URL of a `wait_for_callback` step; throws a TerminalError naming RUNLEDGER_PUBLIC_URL when this process has no public URL. */
  callbackUrl(executionId: string, stepId: string): string;
  /** The execution's cancel request, null when none was made: its compensations read it as `{{cancel.…}}`. */
  cancellation(executionId: string): Promise<Cancellation | null>;
}

/**
 * The interpreter of stored workflows. Configs are rendered at each pass from the trigger, the
 * journaled outputs of earlier steps and the secrets; secret values are masked (`***`) in every
 * step input, output, error and log line before the journal or the log sees them, so neither holds
 * any. Secrecy follows the value: every string a template derives from a secret (`| upper`,
 * `| json`, …; see `render`) is hidden from that step on, and each hidden string is masked in its
 * encoded forms too (see `secretForms`). Hidden strings only grow during a pass, and a pass renders
 * every step again, so a replay hides what the first pass hid. States the definition names are
 * journaled as they are entered (`ctx.setState`).
 */
export function storedWorkflow(options: InterpreterOptions): Workflow<ExecutionInput, Record<string, unknown>> {
  // past its timeout_seconds the engine cancels an execution (brief 004 §9.1: cancelled_by 'system'), not fails it
  const stored: Workflow<ExecutionInput, Record<string, unknown>> = workflow(
    STORED_WORKFLOW,
    // a pause of the stored workflow's id holds its executions alone (a pause of STORED_WORKFLOW holds them all)
    { version: '1', onDeadline: 'cancel', pauseKey: (input: ExecutionInput) => input.workflow_id },
    async (ctx, input: ExecutionInput) => {
      const secrets = await options.secrets.values();
      const run: StoredRun = {
        input,
        executionId: ctx.runId,
        outputs: {},
        secrets,
        hidden: new Set(Object.values(secrets)),
        options,
        state: null,
        workflow: stored,
        partial: null,
      };
      const states = input.states;
      const outputs = () => Object.fromEntries(Object.entries(run.outputs).map(([id, s]) => [id, s.output]));
      if (states?.initial) await enter(run, ctx, states.initial);
      try {
        await runSteps(run, ctx, input.steps, false);
      } catch (error) {
        if (error instanceof PartialStop) {
          if (states?.partial) await enter(run, ctx, states.partial);
          return partialSuccess({ ...outputs(), [error.stepId]: error.output }) as never;
        }
        if (error instanceof CancelledError && states?.cancelled) await enter(run, ctx, states.cancelled);
        throw error;
      }
      if (run.partial !== null) {
        // a map's tolerated failures: every step ran, and the execution says some items failed
        if (states?.partial) await enter(run, ctx, states.partial);
        return partialSuccess(outputs()) as never;
      }
      if (states?.success) await enter(run, ctx, states.success);
      return outputs();
    },
  );
  return stored;
}
