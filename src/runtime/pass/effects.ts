import { LeaseLostError, TerminalError, ValidationError } from '../../errors.js';
import type { StoredEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import type { StepContext } from '../workflow.js';
import { checkOutput, failureData, retryDelay, Suspension } from './calls.js';
import type { Seq } from './history.js';
import type { StepHost } from './steps.js';
import type { StepOptions } from '../workflow.js';

/**
 * Side effects with an unknown outcome. A step marked `effect` journals its *intent* (`step.intent`: the idempotency
 * key and the input the journal shows) in its own committed write before its function runs. A later attempt that
 * finds an intent with no recorded outcome (the process died between the call and its record, or the call timed out)
 * does not call the function blind: it journals `step.unknown`, then asks `reconcile(key)` whether the effect
 * happened (`step.reconciled`; happened: the step completes with that output), or — `atMostOnce` without
 * `reconcile` — waits for a person's decision (signal EFFECT_SIGNAL, `decideEffect`). `step.intent` is the one place
 * that says "this step is an effect" and holds its rendered input: what a dry run would stub and plan.
 */

/** What `reconcile` found: the effect happened (the step's output), or it did not (the step runs again). */
export type Reconciled<T> = { happened: true; output: T } | { happened: false };

/** A step's `effect` option: `true` journals the intent only (an unknown outcome runs the step again, noted). */
export interface EffectOptions<T = unknown> {
  /** Asks the outside world whether the call of `idempotencyKey` happened. Retried like the step when it throws. */
  reconcile?: (idempotencyKey: string, ctx: StepContext) => Promise<Reconciled<T>>;
  /** Without `reconcile`: an unknown outcome waits for a person instead of running the step again. */
  atMostOnce?: boolean;
}

/** The signal a person's decision on an unknown effect is sent as: `{ seq, decision, by, output? }`. */
export const EFFECT_SIGNAL = 'runledger.effect';

/** `effect` of a step's options, checked (a ValidationError names the field), or null when the step is no effect. */
export function effectOf<T>(effect: boolean | EffectOptions<T> | undefined, field = 'effect'): EffectOptions<T> | null {
  if (effect === undefined || effect === false) return null;
  if (effect === true) return {};
  if (typeof effect !== 'object' || effect === null || Array.isArray(effect))
    throw new ValidationError(field, 'must be true or an object { reconcile?, atMostOnce? }');
  for (const key of Object.keys(effect))
    if (key !== 'reconcile' && key !== 'atMostOnce')
      throw new ValidationError(`${field}.${key}`, 'is not one of reconcile, atMostOnce');
  if (effect.reconcile !== undefined && typeof effect.reconcile !== 'function')
    throw new ValidationError(
      `${field}.reconcile`,
      'must be a function (idempotencyKey, ctx) => { happened, output? }',
    );
  if (effect.atMostOnce !== undefined && typeof effect.atMostOnce !== 'boolean')
    throw new ValidationError(`${field}.atMostOnce`, 'must be true or false');
  return effect;
}

/** The intent of attempt `attempt`, journaled (committed) before the step's function runs. */
export function intentEvent(
  seq: Seq,
  name: string,
  attempt: number,
  key: string,
  effect: EffectOptions,
  input: unknown,
) {
  return {
    type: RUN_EVENT.stepIntent,
    data: {
      seq,
      name,
      attempt,
      idempotencyKey: key,
      ...(input === undefined ? {} : { input }),
      reconcile: effect.reconcile !== undefined,
      atMostOnce: effect.atMostOnce === true,
    },
  };
}

/** An intent whose outcome the journal does not hold, and what was done about it so far. */
export interface Unknown {
  attempt: number;
  /** `step.unknown` is journaled for it. */
  noted: boolean;
  /** Failed `reconcile` calls for it. */
  reconcileFailures: number;
  /** Signals (versions) whose decision the journal already took. */
  decided: Set<number>;
}

/** The intent of `events` (one step's, in order) with no outcome after it, or null. */
export function unknownOf(events: StoredEvent[]): Unknown | null {
  let open: Unknown | null = null;
  const decided = new Set<number>();
  for (const event of events) {
    const data = event.data as { attempt: number; phase?: string; happened?: boolean; signal?: number };
    if (event.type === RUN_EVENT.stepReconciled && data.signal !== undefined) decided.add(data.signal);
    if (event.type === RUN_EVENT.stepIntent)
      open = { attempt: data.attempt, noted: false, reconcileFailures: 0, decided };
    else if (!open) continue;
    else if (event.type === RUN_EVENT.stepUnknown) open.noted = true;
    else if (event.type === RUN_EVENT.stepCompleted || event.type === RUN_EVENT.stepReconciled) open = null;
    else if (event.type === RUN_EVENT.stepFailed && data.phase === 'reconcile') open.reconcileFailures += 1;
    // the call itself failed: its outcome is known (a timeout's is not: the call may have gone through)
    else if (event.type === RUN_EVENT.stepFailed && (event.data as { errorClass?: string }).errorClass !== 'timeout')
      open = null;
  }
  return open;
}

/**
 * Before a new attempt of an effect step: settles an unknown outcome. Returns `{ output }` when the effect happened
 * (the step is complete), null when the step runs again; throws a Suspension while it waits (a retry of `reconcile`,
 * a person's decision) and the step's error when it failed for good.
 */
export async function settleUnknown<T>(
  host: StepHost,
  seq: Seq,
  name: string,
  key: string,
  effect: EffectOptions<T>,
  options: StepOptions<T>,
): Promise<{ output: T } | null> {
  const unknown = unknownOf(host.history.entries.get(seq)?.events ?? []);
  if (!unknown) return null;
  const { attempt } = unknown;
  const waits = !effect.reconcile && effect.atMostOnce === true;
  if (!unknown.noted)
    await host.write([
      { type: RUN_EVENT.stepUnknown, data: { seq, name, attempt, idempotencyKey: key, waitsForPerson: waits } },
    ]);
  const complete = async (output: T, extra: Record<string, unknown>) => {
    checkOutput(name, output, host.maxEventBytes);
    await host.write([
      { type: RUN_EVENT.stepReconciled, data: { seq, name, attempt, happened: true, ...extra } },
      { type: RUN_EVENT.stepCompleted, data: { seq, name, attempt, output: output ?? null, reconciled: true } },
    ]);
    return { output };
  };
  if (effect.reconcile) {
    const tries = unknown.reconcileFailures + 1;
    let found: Reconciled<T>;
    try {
      found = checkReconciled(
        await host.attempt(
          (ctx) => effect.reconcile!(key, ctx),
          { idempotencyKey: key, attempt: tries },
          options.timeout,
        ),
      );
    } catch (error) {
      if (error instanceof LeaseLostError) throw error;
      const delay = retryDelay(error, tries, options.retry);
      const retryAt = delay === null ? null : host.now() + delay;
      await host.write([
        {
          type: RUN_EVENT.stepFailed,
          data: { seq, name, attempt, phase: 'reconcile', ...failureData(error), retryAt },
        },
      ]);
      if (retryAt === null) throw error;
      throw new Suspension(retryAt);
    }
    if (found.happened) return complete(found.output, { by: 'reconcile' });
    await host.write([
      { type: RUN_EVENT.stepReconciled, data: { seq, name, attempt, happened: false, by: 'reconcile' } },
    ]);
    return null;
  }
  if (!waits) return null;
  const decision = decisionFor(host, seq, unknown.decided);
  // the decision's signal wakes the run
  if (!decision) throw new Suspension(Number.POSITIVE_INFINITY);
  const taken = { by: decision.by, signal: decision.version };
  if (decision.decision === 'happened') return complete(decision.output as T, taken);
  if (decision.decision === 'again') {
    await host.write([{ type: RUN_EVENT.stepReconciled, data: { seq, name, attempt, happened: false, ...taken } }]);
    return null;
  }
  const error = new TerminalError(
    `step ${name}: its effect's outcome was unknown and ${decision.by} decided to fail it`,
  );
  await host.write([
    { type: RUN_EVENT.stepReconciled, data: { seq, name, attempt, happened: null, ...taken } },
    {
      type: RUN_EVENT.stepFailed,
      data: { seq, name, attempt, phase: 'decided', ...failureData(error), retryAt: null },
    },
  ]);
  throw error;
}

/** What `reconcile` answered, checked: `{ happened: true, output }` or `{ happened: false }`. */
function checkReconciled<T>(answer: Reconciled<T>): Reconciled<T> {
  if (typeof answer !== 'object' || answer === null || typeof answer.happened !== 'boolean')
    throw new TerminalError(
      `reconcile must answer { happened: true, output } or { happened: false } (got ${JSON.stringify(answer)})`,
    );
  return answer;
}

interface Decision {
  version: number;
  decision: 'happened' | 'again' | 'fail';
  by: string;
  output?: unknown;
}

/** The first decision sent for the unknown effect at `seq` that the journal did not take yet. */
function decisionFor(host: StepHost, seq: Seq, decided: Set<number>): Decision | null {
  for (const s of host.history.signals) {
    const p = s.payload as Partial<Decision> & { seq?: Seq };
    if (s.name !== EFFECT_SIGNAL || decided.has(s.version) || p?.seq !== seq) continue;
    if (p.decision !== 'happened' && p.decision !== 'again' && p.decision !== 'fail') continue;
    return {
      version: s.version,
      decision: p.decision,
      by: typeof p.by === 'string' ? p.by : 'unknown',
      ...('output' in p ? { output: p.output } : {}),
    };
  }
  return null;
}
