import { ConflictError, ValidationError } from '../../errors.js';
import { checkJson, checkName } from '../../json.js';
import type { DecisionHost } from './budget-decision.js';
import { EFFECT_SIGNAL } from './effects.js';

/**
 * A person's decision on an effect step whose outcome is unknown (`atMostOnce` without `reconcile`): it `happened`
 * (the step completes with `output`), run it `again`, or `fail` the step.
 */
export interface EffectDecision {
  decision: 'happened' | 'again' | 'fail';
  /** Who decided: journaled with the decision (`step.reconciled`'s `by`). */
  by: string;
  /** `happened` only: the step's output, as if its call had returned it. */
  output?: unknown;
}

const DECISIONS = ['happened', 'again', 'fail'];

/**
 * Decides the unknown effect run `id` waits on: sent to the run as a signal (it wakes the run, which journals the
 * decision with `by`). A run not waiting for one is a ConflictError; a second decision on the same wait is ignored.
 *
 * @example await decideEffect(engine.runtime, 'run_01J…', { decision: 'happened', by: 'ana', output: { id: 'p_1' } })
 */
export async function decideEffect(
  host: DecisionHost,
  id: string,
  decision: EffectDecision,
): Promise<{ seq: number | string; name: string; attempt: number }> {
  const by = checkName('by', decision.by, 200);
  if (!DECISIONS.includes(decision.decision))
    throw new ValidationError(
      'decision',
      `must be one of ${DECISIONS.join(', ')} (got ${JSON.stringify(decision.decision)})`,
    );
  if (decision.output !== undefined && decision.decision !== 'happened')
    throw new ValidationError('output', "is for a 'happened' decision");
  if (decision.output !== undefined) checkJson('output', decision.output, 256 * 1024);
  const view = await host.view(id);
  const wait = view.effectWait;
  if (!wait || view.status !== 'waiting')
    throw new ConflictError(`run ${id} is not waiting for a decision on an effect (it is ${view.status})`);
  await host.signal(
    id,
    EFFECT_SIGNAL,
    {
      seq: wait.seq,
      decision: decision.decision,
      by,
      ...(decision.output === undefined ? {} : { output: decision.output }),
    },
    { idempotencyKey: `effect:${wait.seq}:${wait.attempt}` },
  );
  return wait;
}
