import { toMs } from '../../duration.js';
import { StepTimedOutError, TerminalError } from '../../errors.js';
import type { Duration } from '../../duration.js';
import type { WorkflowContext } from '../../runtime/workflow.js';
import { mask } from '../mask.js';
import type { LeafStep } from '../schema.js';
import { render } from '../template/render.js';
import { durationProblem, instantProblem, matchValue, parseMatch } from './configs.js';
import { finish, scopeOf, type StoredRun } from './run.js';

type SleepStep = Extract<LeafStep, { type: 'sleep' }>;
type EventStep = Extract<LeafStep, { type: 'wait_for_event' }>;

/**
 * A durable timer (`ctx.sleep` / `ctx.sleepUntil`): the execution holds no worker meanwhile. A template that
 * renders to no duration or time fails the step for good, naming the field and what it rendered to.
 */
export async function sleepStep(
  run: StoredRun,
  ctx: WorkflowContext,
  step: SleepStep,
  rendered: unknown,
  problem: unknown,
): Promise<unknown> {
  const config = rendered as { duration?: unknown; until?: unknown } | undefined;
  let bad: unknown = problem;
  if (bad === null && config?.duration !== undefined) {
    const why = durationProblem(config.duration);
    if (why !== null) bad = new TerminalError(`config.duration ${why}`);
  } else if (bad === null) {
    const why = instantProblem(config?.until);
    if (why !== null) bad = new TerminalError(`config.until ${why}`);
  }
  if (bad !== null) return finish(run, ctx, step, () => Promise.reject(bad));
  if (config!.duration !== undefined) {
    const ms = toMs(config!.duration as Duration);
    await ctx.sleep(step.id, ms);
    return finish(run, ctx, step, async () => ({ duration_ms: ms }));
  }
  const at = typeof config!.until === 'number' ? config!.until : Date.parse(config!.until as string);
  await ctx.sleepUntil(step.id, at);
  return finish(run, ctx, step, async () => ({ until: new Date(at).toISOString() }));
}

/** What the runtime's wait takes: `match` and `lookback` once `ctx.waitForEvent` has them (see `waitFor`). */
export interface EventWait {
  timeout?: Duration;
  match?: { path: string; value: unknown };
  lookback?: Duration;
}

/**
 * Waits for event `event` (matching `match`, when given), or until `timeout`. The output is the event's payload, or
 * null at the timeout; with `on_timeout: 'fail'` the step fails instead (a StepTimedOutError naming the step).
 */
export async function waitForEventStep(run: StoredRun, ctx: WorkflowContext, step: EventStep): Promise<unknown> {
  const { event, timeout, lookback, on_timeout: onTimeout } = step.config;
  let match: EventWait['match'];
  if (step.config.match !== undefined) {
    const parsed = parseMatch(step.config.match);
    const derived = new Set<string>();
    try {
      match = { path: parsed.path, value: matchValue(parsed.value, (text) => render(text, scopeOf(run), derived)) };
    } catch (error) {
      return finish(run, ctx, step, () =>
        Promise.reject(new TerminalError(`config.match ${(error as Error).message}`)),
      );
    } finally {
      for (const text of derived) run.hidden.add(text);
    }
  }
  const options: EventWait = {
    ...(timeout === undefined ? {} : { timeout }),
    ...(match ? { match } : {}),
    ...(lookback === undefined ? {} : { lookback }),
  };
  const payload = await waitFor(ctx, event, options);
  return finish(run, ctx, step, async () => {
    if (payload === null && onTimeout === 'fail')
      throw new StepTimedOutError(`wait_for_event ${step.id}: no ${event} event within ${timeout}`);
    return mask(payload, run.hidden);
  });
}

/**
 * The runtime's wait for an event. Until `ctx.waitForEvent` takes `match` and `lookback` (the lead's change to
 * runtime/), only the timeout is passed: any `event` signal to the execution resumes it.
 */
function waitFor(ctx: WorkflowContext, event: string, options: EventWait): Promise<unknown> {
  return ctx.waitForEvent(event, options.timeout === undefined ? {} : { timeout: options.timeout });
}
