import { CancelledError, RetryAfterError, StepTimedOutError, TerminalError } from '../../errors.js';
import { errorClassOf } from '../../observe/error-class.js';
import type { RetryPolicy, StepContext, Workflow, WorkflowContext } from '../../runtime/workflow.js';
import { ACTIONS, type ActionType, type LogLine } from '../actions/index.js';
import { httpRequest, type HttpRequestConfig } from '../actions/http.js';
import { maskText } from '../../mask.js';
import { mask } from '../mask.js';
import type { LeafStep, StepDefinition } from '../schema.js';
import { failureState } from '../state.js';
import { render, type Scope } from '../template/render.js';
import type { ExecutionInput, InterpreterOptions } from '../interpreter.js';
import { pollCancel } from './cancel.js';
import { NOT_CANCELLED } from '../cancel-reason.js';
import { cleanup } from './cleanup.js';
import { describeCondition, holds } from './condition.js';
import { skipReason } from './guard.js';
import { childStep } from './child.js';
import { generateStep } from './generate.js';
import { plainItems } from './item.js';
import { isPartialMap, runMap } from './map.js';
import { runParallel } from './parallel.js';
import { sleepStep, waitForEventStep } from './waits.js';
import { rateLimitOf } from '../flow.js';
import { httpEffectOf } from './http-effect.js';

/** One execution of a stored workflow as its steps see it: the outputs so far (shared by parallel branches: ids are unique). */
export interface StoredRun {
  input: ExecutionInput;
  executionId: string;
  outputs: Scope['steps'];
  secrets: Record<string, string>;
  /** Secret values and every string a template derived from one: masked wherever they would be written. */
  hidden: Set<string>;
  options: InterpreterOptions;
  /** The state last entered (in this pass's replay too): compensations look at it. */
  state: string | null;
  /** The interpreter itself: what a `workflow` step starts for a stored workflow. */
  workflow: Workflow;
  /** In a map's step: the item's index (its child runs are the item's own). */
  item?: number;
  /** The first map step some of whose items failed within its tolerance: the execution ends `partial_success`. */
  partial: string | null;
}

/** Enters a business state: journaled, and remembered for the compensations. */
export async function enter(run: StoredRun, ctx: WorkflowContext, state: string): Promise<void> {
  await ctx.setState(state);
  run.state = state;
}

/** The steps of a list, one after another; the first that fails ends the list. */
export async function runSteps(
  run: StoredRun,
  ctx: WorkflowContext,
  steps: StepDefinition[],
  inBranch: boolean,
): Promise<void> {
  for (const step of steps) await runStep(run, ctx, step, inBranch);
}

export function scopeOf(run: StoredRun): Scope {
  return {
    trigger: run.input.trigger_data,
    steps: run.outputs,
    secrets: run.secrets,
    execution: { id: run.executionId },
    workflow: { id: run.input.workflow_id },
  };
}

/**
 * One step: the state it enters, its work, the state it enters when done. A failure outside a
 * parallel branch takes the execution to its failure state (a branch's is decided by its parallel
 * step). A step the rerun reuses returns its recorded output and does nothing else.
 */
async function runStep(run: StoredRun, ctx: WorkflowContext, step: StepDefinition, inBranch: boolean): Promise<void> {
  const reused = step.type === 'parallel' ? undefined : run.input.reuse?.[step.id];
  if (reused) {
    const from = run.input.rerun_of?.execution_id;
    const output = await ctx.step(
      step.id,
      async () => {
        if ('error' in reused) throw new TerminalError(`not retried: ${reused.error}`);
        return reused.output;
      },
      { input: { reused_from: from }, retry: { maxAttempts: 1 }, ...compensation(run, step) },
    );
    run.outputs[step.id] = { output };
    // a reused map whose items partly failed: this execution ends as the one it reuses did
    if (step.type === 'map' && isPartialMap(output)) run.partial ??= step.id;
    return;
  }
  if (step.state) await enter(run, ctx, step.state);
  let output: unknown;
  try {
    output =
      step.type === 'parallel'
        ? await runParallel(run, ctx, step)
        : step.type === 'map'
          ? await runMap(run, ctx, step)
          : await perform(run, ctx, step);
  } catch (error) {
    if (!inBranch && !(error instanceof CancelledError) && !isPartialStop(error)) {
      const decided = (error as { failureState?: string }).failureState;
      const state = decided ?? failureState(error, [step.on_error, run.input.on_error], run.input.states?.failed);
      if (state) await enter(run, ctx, state);
    }
    throw error;
  }
  run.outputs[step.id] = { output };
  if (step.state_after) await enter(run, ctx, step.state_after);
}

/** The work of a leaf step, as a durable call: an action is a `ctx.step`, a poll a `ctx.poll`, a callback a wait. */
async function perform(run: StoredRun, ctx: WorkflowContext, step: LeafStep): Promise<unknown> {
  const { rendered, problem } = tryRender(step.config, run);
  const common = {
    retry: retryPolicy(step),
    ...(step.label ? { label: step.label } : {}),
    input: problem === null ? mask(rendered, run.hidden) : null,
  };
  if (step.type === 'poll') {
    const config = step.config;
    const request = { method: config.method, url: '', ...(rendered as object) } as HttpRequestConfig & typeof config;
    const { until, fail_when: failWhen } = config;
    return ctx.poll(
      step.id,
      (stepCtx) => act(run, problem, () => httpRequest(requestOf(request), { ...stepCtx, allow: run.options.allow })),
      {
        ...common,
        ...(step.timeout_seconds ? { timeout: step.timeout_seconds * 1000 } : {}),
        until: (answer) => holds(until, answer),
        ...(failWhen
          ? {
              failWhen: (answer: unknown) =>
                holds(failWhen, answer) && `${describeCondition(failWhen, answer)} (fail_when)`,
            }
          : {}),
        initialDelay: config.initial_delay_seconds * 1000,
        interval: config.interval_seconds * 1000,
        factor: config.factor,
        maxInterval: config.max_interval_seconds * 1000,
        maxWait: config.max_wait_seconds * 1000,
        ...rateLimitOf(step),
        ...compensation(run, step),
        ...(step.cancel
          ? {
              cancel: pollCancel(step.cancel, {
                render: (config) => renderOrThrow(config, run),
                send: (config, stepCtx) =>
                  act(run, null, () => httpRequest(requestOf(config), { ...stepCtx, allow: run.options.allow })),
                allow: run.options.allow,
              }),
            }
          : {}),
      },
    );
  }
  if (step.type === 'wait_for_callback') return waitForCallback(run, ctx, step);
  if (step.type === 'sleep') return sleepStep(run, ctx, step, rendered, problem);
  if (step.type === 'wait_for_event') return waitForEventStep(run, ctx, step);
  if (step.type === 'workflow' || step.type === 'function') return childStep(run, ctx, step, rendered, problem);
  if (step.type === 'generate') return generateStep(run, ctx, step, rendered, problem, common.retry);
  const action = ACTIONS[step.type as ActionType] as (
    config: unknown,
    ctx: Parameters<(typeof ACTIONS)['log']>[1],
  ) => Promise<unknown>;
  return ctx.step(
    step.id,
    (stepCtx) => {
      const log = (line: LogLine) => run.options.log({ ...line, message: maskText(line.message, run.hidden) });
      return act(run, problem, () =>
        action(rendered, {
          ...stepCtx,
          executionId: run.executionId,
          workflowId: run.input.workflow_id,
          stepId: step.id,
          allow: run.options.allow,
          log,
        }),
      );
    },
    {
      ...common,
      ...(step.timeout_seconds ? { timeout: step.timeout_seconds * 1000 } : {}),
      ...compensation(run, step),
      ...(step.type === 'http_request' ? rateLimitOf(step) : {}),
      ...(step.type === 'http_request' ? httpEffectOf(run, step.effect) : {}),
    },
  );
}

/**
 * Sends the step's request (where `{{callback.url}}` is the one-time URL), then waits without
 * polling until the URL is POSTed to or the step's timeout passes. The step's output is the body.
 * A process with no public URL to hand out fails the request step for good, naming the setting.
 */
async function waitForCallback(
  run: StoredRun,
  ctx: WorkflowContext,
  step: Extract<LeafStep, { type: 'wait_for_callback' }>,
): Promise<unknown> {
  if (step.config.request) {
    const { rendered, problem } = callbackUrl(run, step.id, (url) => tryRender(step.config.request, run, { url }));
    await ctx.step(
      `${step.id}:request`,
      (stepCtx) =>
        act(run, problem, () => httpRequest(rendered as HttpRequestConfig, { ...stepCtx, allow: run.options.allow })),
      {
        retry: retryPolicy(step),
        input: problem === null ? mask(rendered, run.hidden) : null,
        ...rateLimitOf(step),
      },
    );
  }
  const body = await ctx.waitForEvent(`callback:${step.id}`, { timeout: step.timeout_seconds! * 1000 });
  return ctx.step(
    step.id,
    async () => {
      if (body === null)
        throw new StepTimedOutError(`wait_for_callback ${step.id}: no callback within ${step.timeout_seconds} s`);
      return mask(body, run.hidden);
    },
    { retry: { maxAttempts: 1 }, ...(step.label ? { label: step.label } : {}), ...compensation(run, step) },
  );
}

/** The rendering with the step's URL, or the missing URL as the problem its request step fails with. */
function callbackUrl(
  run: StoredRun,
  stepId: string,
  withUrl: (url: string) => { rendered: unknown; problem: unknown },
): { rendered: unknown; problem: unknown } {
  let url: string;
  try {
    url = run.options.callbackUrl(run.executionId, stepId);
  } catch (error) {
    return { rendered: undefined, problem: error };
  }
  return withUrl(url);
}

function requestOf(config: HttpRequestConfig): HttpRequestConfig {
  const { method, url, headers, body, timeout_seconds } = config;
  return {
    method,
    url,
    ...(headers ? { headers } : {}),
    ...(body === undefined ? {} : { body }),
    ...(timeout_seconds ? { timeout_seconds } : {}),
  };
}

/** Runs the action with secrets masked out of its output and errors; a template that did not render fails for good. */
export async function act(run: StoredRun, problem: unknown, work: () => Promise<unknown>): Promise<unknown> {
  if (problem !== null) throw masked(problem, run.hidden, true);
  try {
    return mask(await work(), run.hidden);
  } catch (error) {
    throw masked(error, run.hidden, false);
  }
}

function compensation(
  run: StoredRun,
  step: StepDefinition,
): { compensate?: (output: unknown, ctx: StepContext) => Promise<unknown> } {
  const config = step.compensate;
  if (!config) return {};
  return {
    compensate: async (output, stepCtx) => {
      // a failure in a retryable state keeps what the execution made, for a rerun or retry to reuse
      if (run.state !== null && run.input.states?.retryable?.includes(run.state))
        return { skipped: `kept: ${run.state} is retryable` };
      const { when, unless, ...request } = config;
      // the cancel request, if any (brief 004 §9.2: `{{cancel.delete_artifacts}}`), journaled before compensations run
      const asked = await run.options.cancellation(run.executionId);
      const cancel = asked ? { requested: true, ...asked } : NOT_CANCELLED;
      const scope = { ...scopeOf(run), steps: { ...run.outputs, [step.id]: { output } }, cancel };
      const derived = new Set<string>();
      const hide = () => {
        for (const text of derived) run.hidden.add(text);
      };
      const skipped = skipReason({ when, unless }, scope, derived);
      hide();
      if (skipped !== null) return { skipped: maskText(skipped, run.hidden) };
      const rendered = render(request, scope, derived) as HttpRequestConfig;
      hide();
      return cleanup(rendered, stepCtx, run.options.allow);
    },
  };
}

/**
 * The outcome of a step that waits or starts a child, journaled as a call named by its id (what its record
 * reads), tried once: `work` returns its output or throws its failure.
 */
export function finish(
  run: StoredRun,
  ctx: WorkflowContext,
  step: StepDefinition,
  work: () => Promise<unknown>,
): Promise<unknown> {
  return ctx.step(step.id, () => act(run, null, work), {
    retry: { maxAttempts: 1 },
    ...(step.label ? { label: step.label } : {}),
    ...compensation(run, step),
  });
}

/** Renders a config; the strings it derived from secrets are hidden from then on. */
export function tryRender(
  config: unknown,
  run: StoredRun,
  callback?: { url: string },
): { rendered: unknown; problem: unknown } {
  const derived = new Set<string>();
  try {
    return { rendered: render(config, { ...scopeOf(run), ...(callback ? { callback } : {}) }, derived), problem: null };
  } catch (error) {
    return { rendered: undefined, problem: error };
  } finally {
    for (const text of derived) run.hidden.add(text);
  }
}

function renderOrThrow(config: unknown, run: StoredRun): HttpRequestConfig {
  const derived = new Set<string>();
  const rendered = render(config, scopeOf(run), derived) as HttpRequestConfig;
  for (const text of derived) run.hidden.add(text);
  return rendered;
}

function retryPolicy(step: StepDefinition): RetryPolicy {
  const retry = { max_attempts: 3, backoff_seconds: 1, backoff_rate: 2, ...step.retry };
  return {
    maxAttempts: retry.max_attempts,
    backoff: { base: retry.backoff_seconds * 1000, factor: retry.backoff_rate, max: 10 * 60_000 },
  };
}

/** The same kind of error (so the retry decision and the status hold) with every secret value masked out of its message. */
export function masked(error: unknown, hidden: Set<string>, terminal: boolean): Error {
  const name = error instanceof Error ? error.name : 'Error';
  const message = plainItems(maskText(error instanceof Error ? error.message : String(error), hidden));
  let out: Error;
  if (error instanceof RetryAfterError) out = new RetryAfterError(message, error.retryAfterMs);
  else if (terminal || error instanceof TerminalError)
    out = new TerminalError(name === 'TerminalError' ? message : `${name}: ${message}`);
  else out = Object.assign(new Error(message), { name });
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number') Object.assign(out, { status });
  // what failed (observe/error-class.ts), from the error before masking: its socket code and mark are not copied
  return Object.assign(out, { errorClass: errorClassOf(error) });
}

/** Thrown past the steps after a parallel step whose branches partly failed: the execution ends `partial_success`. */
export class PartialStop extends Error {
  override name = 'PartialStop';
  constructor(
    readonly stepId: string,
    readonly output: unknown,
  ) {
    super(`parallel step ${stepId} partly failed`);
  }
}

function isPartialStop(error: unknown): error is PartialStop {
  return error instanceof PartialStop;
}
