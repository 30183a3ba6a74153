import { toMs } from '../../duration.js';
import { StepTimedOutError, TerminalError } from '../../errors.js';
import type { Duration } from '../../duration.js';
import type { EventMatch } from '../../runtime/match.js';
import type { WaitOptions, WorkflowContext } from '../../runtime/workflow.js';
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

/**
 * Waits for event `event` (`ctx.waitForEvent`), or until `timeout`: a signal of that name to the execution, or, with
 * `match`, a business event of that type (`POST /events`) whose `data.<path>` equals the rendered value, by
 * correlation (`lookback`: one that arrived that long before the wait began counts). The output is the event's
 * payload (a business event's envelope), or null at the timeout; with `on_timeout: 'fail'` the step fails instead
 * (a StepTimedOutError naming the step and the timeout).
 */
export async function waitForEventStep(run: StoredRun, ctx: WorkflowContext, step: EventStep): Promise<unknown> {
  const { event, timeout, lookback, on_timeout: onTimeout } = step.config;
  let match: EventMatch | undefined;
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
  if (match !== undefined && (match.value === null || match.value === undefined))
    return finish(run, ctx, step, () =>
      Promise.reject(new TerminalError(`config.match: ${step.config.match} gave no value to match (null)`)),
    );
  const options: WaitOptions = {
    ...(timeout === undefined ? {} : { timeout }),
    ...(match ? { match } : {}),
    ...(lookback === undefined ? {} : { lookback }),
  };
  const payload = await ctx.waitForEvent(event, options);
  return finish(run, ctx, step, async () => {
    if (payload === null && onTimeout === 'fail')
      throw new StepTimedOutError(`wait_for_event ${step.id}: no ${event} event within ${timeout}`);
    return mask(payload, run.hidden);
  });
}
