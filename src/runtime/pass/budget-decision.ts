import { toMs } from '../../duration.js';
import { ConflictError, ValidationError } from '../../errors.js';
import { checkName } from '../../json.js';
import type { Budget } from '../flow.js';
import type { RunView } from '../read/view.js';
import { BUDGET_SIGNAL } from './budget.js';

/** A person's decision on a run waiting for its budget: approve (with more budget) or reject. */
export interface BudgetDecision {
  decision: 'approve' | 'reject';
  /** Who decided: journaled with the decision. */
  by: string;
  /** Approve only: what to add to the budget (each cap it names grows by it). Default: the run's budget again. */
  extend?: Budget;
}

/** What deciding needs of the runtime: the run's view and its signals. */
export interface DecisionHost {
  view(id: string): Promise<RunView>;
  signal(id: string, name: string, payload: unknown, options?: { idempotencyKey?: string }): Promise<unknown>;
}

/**
 * Decides the budget wait of run `id`: sent to the run as a signal (it wakes the run, which journals the decision
 * with `by` and goes on, or fails with a BudgetExceededError). A run not waiting for its budget is a ConflictError;
 * a second decision on the same wait is ignored (the first one stands).
 *
 * @example await decideBudget(engine.runtime, 'run_01J…', { decision: 'approve', by: 'ana', extend: { tokens: 10_000 } })
 */
export async function decideBudget(
  host: DecisionHost,
  id: string,
  decision: BudgetDecision,
): Promise<{ round: number; reason: string }> {
  const by = checkName('by', decision.by, 200);
  if (decision.decision !== 'approve' && decision.decision !== 'reject')
    throw new ValidationError('decision', "must be 'approve' or 'reject'");
  if (decision.extend !== undefined && decision.decision === 'reject')
    throw new ValidationError('extend', 'is for an approval');
  const extend = decision.extend === undefined ? undefined : checkExtend(decision.extend);
  const view = await host.view(id);
  const wait = view.budgetWait;
  if (!wait || view.status !== 'waiting')
    throw new ConflictError(`run ${id} is not waiting for a budget decision (it is ${view.status})`);
  await host.signal(
    id,
    BUDGET_SIGNAL,
    { round: wait.round, decision: decision.decision, by, ...(extend ? { extend } : {}) },
    { idempotencyKey: `budget:${wait.round}` },
  );
  return wait;
}

const CAPS = ['tokens', 'cost', 'toolCalls', 'steps'] as const;

/** An approval's extension: positive caps (whole for tool calls and steps), a wall time; a ValidationError names the field. */
function checkExtend(extend: Budget): Budget {
  if (typeof extend !== 'object' || extend === null || Array.isArray(extend))
    throw new ValidationError('extend', 'must be an object');
  const out: Budget = {};
  for (const [key, value] of Object.entries(extend)) {
    if (key === 'wallTime') {
      out.wallTime = toMs(value as Budget['wallTime'] & {}, 'extend.wallTime');
      continue;
    }
    if (!(CAPS as readonly string[]).includes(key))
      throw new ValidationError(`extend.${key}`, 'is not one of tokens, cost, toolCalls, steps, wallTime');
    const whole = key === 'toolCalls' || key === 'steps';
    if (
      typeof value !== 'number' ||
      !Number.isFinite(value) ||
      value <= 0 ||
      value > 1e15 ||
      (whole && !Number.isInteger(value))
    )
      throw new ValidationError(
        `extend.${key}`,
        `must be a positive ${whole ? 'whole ' : ''}number (got ${JSON.stringify(value)})`,
      );
    out[key as (typeof CAPS)[number]] = value;
  }
  if (Object.keys(out).length === 0) throw new ValidationError('extend', 'names nothing to add');
  return out;
}
