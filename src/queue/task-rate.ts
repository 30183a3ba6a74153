import { RetryAfterError, ValidationError } from '../errors.js';
import { checkName } from '../json.js';
import { rateDeferral, rateExtra } from '../storage/rate-after.js';
import type { Store, Task } from '../storage/store.js';
import type { TaskRate } from '../storage/tasks.js';
import type { TaskHandler, WorkOptions } from './handler.js';

/** A task's named rate limit (`EnqueueOptions.rateLimit`); `key` a constant (a task has no run input to read one from). */
export interface TaskRateOption {
  name: string;
  /** Units one attempt takes (default 1). */
  units?: number;
  /** The bucket, for a limit defined with a key: a constant such as the tenant's id. */
  key?: string;
}

/** `option` checked in shape (the limit's existence: `checkTaskRates`). */
export function taskRate(option: unknown, at: (field: string) => string): TaskRate {
  if (typeof option !== 'object' || option === null || Array.isArray(option))
    throw new ValidationError(at('rateLimit'), 'must be an object { name, units?, key? }');
  const o = option as Record<string, unknown>;
  const name = checkName(at('rateLimit.name'), o.name, 100);
  const units = o.units ?? 1;
  if (typeof units !== 'number' || !Number.isFinite(units) || units <= 0)
    throw new ValidationError(at('rateLimit.units'), `must be a positive number (got ${JSON.stringify(o.units)})`);
  const key = o.key === undefined || o.key === null ? '' : checkName(at('rateLimit.key'), o.key, 200);
  return { name, units, key };
}

/**
 * Refuses (a ValidationError naming the field) a task whose limit does not exist, whose units are more than the limit allows in a
 * period (it would never run), or that names no key of a limit kept per key.
 */
export async function checkTaskRates(
  store: Store,
  rates: Array<TaskRate | null | undefined>,
  at: (i: number, field: string) => string,
): Promise<void> {
  for (const [i, rate] of rates.entries()) {
    if (!rate) continue;
    const limit = await store.rateLimitGet({ name: rate.name });
    if (!limit) throw new ValidationError(at(i, 'rateLimit.name'), `no rate limit named '${rate.name}'`);
    if (rate.units > limit.limit)
      throw new ValidationError(
        at(i, 'rateLimit.units'),
        `${rate.units} units are more than the limit '${rate.name}' allows in a period (${limit.limit})`,
      );
    const perInput = limit.key !== null && /^input([.[]|$)/.test(limit.key);
    if (perInput && !rate.key)
      throw new ValidationError(at(i, 'rateLimit.key'), `the limit '${rate.name}' keeps one bucket per key: name one`);
    // a limit with a constant key counts in that bucket, as a step taking it does
    if (!rate.key && limit.key) rate.key = limit.key;
  }
}

/**
 * Takes the task's limit before its attempt's handler runs: false when taken (or the task has
 * none); true when the bucket had no room and the task was given back (ready at the bucket's next
 * slot, its attempt not counted; a lease no longer held gives back nothing). The take is recorded under the claim (task, attempt, lease token):
 * asked again for the same claim, the store gives the same answer, never a second charge. A limit
 * that can never have room (removed, or made smaller than the units) fails the attempt.
 */
export async function rateGate(store: Store, task: Task, onError?: (error: unknown) => void): Promise<boolean> {
  const rate = task.rateLimit;
  if (!rate) return false;
  const result = await store.rateTake({
    takeId: `task:${task.id}#${task.attempts}:${task.leaseToken}`,
    uses: [{ name: rate.name, key: rate.key, units: rate.units }],
  });
  if (result.ok) return false;
  if (result.retryAt === null) throw new Error(`rateLimit: ${result.refused}`);
  const lease = { id: task.id, leaseToken: task.leaseToken! };
  await store.taskRelease({ leases: [lease], runAt: result.retryAt }).catch((error) => onError?.(error));
  return true;
}

/**
 * `handler` leaving its task's limit what the call did, as a step does: a `RetryAfterError` (a 429's Retry-After)
 * pushes the bucket's next free slot, so every task and step sharing it waits; `charge` (`WorkOptions.charge`,
 * checked here) charges what the handler really used past the units taken, before its task is settled. A charge
 * that throws or gives no positive number charges nothing more and is reported (`onError`, a ValidationError at
 * `charge`): the call is done, and failing its task would make it again.
 *
 * @example ratedHandler(store, ask, { charge: (answer) => answer.usage.total_tokens }) // TaskQueue.work wraps each handler so
 */
export function ratedHandler(
  store: Store,
  handler: TaskHandler,
  options: Pick<WorkOptions, 'charge' | 'onError'>,
): TaskHandler {
  const { charge, onError } = options;
  if (charge !== undefined && typeof charge !== 'function')
    throw new ValidationError('charge', `must be a function (result, task) => units (got ${typeof charge})`);
  return (payload, ctx) => {
    const rate = ctx.task.rateLimit;
    if (!rate) return handler(payload, ctx);
    return rated(store, rate, () => handler(payload, ctx), charge && ((result) => charge(result, ctx.task)), onError);
  };
}

async function rated(
  store: Store,
  rate: TaskRate,
  call: () => Promise<unknown>,
  charge: ((result: unknown) => number) | undefined,
  onError: ((error: unknown) => void) | undefined,
): Promise<unknown> {
  let result: unknown;
  try {
    result = await call();
  } catch (error) {
    if (error instanceof RetryAfterError)
      await store
        .now()
        .then((now) => rateDeferral(error, [rate], now)?.(store))
        .catch((e) => onError?.(e));
    throw error;
  }
  if (!charge) return result;
  try {
    const used = charge(result);
    if (!(typeof used === 'number' && Number.isFinite(used) && used > 0))
      throw new ValidationError(
        'charge',
        `must give a positive number of units (got ${String(used)}): only the ${rate.units} taken count`,
      );
    for (const extra of rateExtra([{ charge: () => used }], [rate], result)) await store.rateCharge(extra);
  } catch (error) {
    onError?.(error);
  }
  return result;
}
