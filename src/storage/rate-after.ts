import { RetryAfterError } from '../errors.js';
import type { RateUse } from './rates.js';
import type { Store } from './store.js';

/*
 * What a call that took rate limits leaves to its limits once it is over, the same for a step, a poll, a tool call
 * and a task: the units it really used past those taken, and a downstream 429's push of the next free slot.
 */

/**
 * After the call: what each use's `charge` says the call really used, past the units taken, as
 * the extra units to charge (none when it used no more, or `charge` gave no number).
 *
 * @example rateExtra([{ charge: (o) => o.tokens }], [{ name: 'tpm', key: '', units: 100 }], { tokens: 350 }) // units 250
 */
export function rateExtra<O>(uses: Array<{ charge?: (output: O) => number }>, taken: RateUse[], output: O): RateUse[] {
  const extra: RateUse[] = [];
  uses.forEach((use, i) => {
    if (!use.charge || !taken[i]) return;
    const used = use.charge(output);
    if (typeof used === 'number' && Number.isFinite(used) && used > taken[i]!.units)
      extra.push({ ...taken[i]!, units: used - taken[i]!.units });
  });
  return extra;
}

/**
 * A failure carrying a `Retry-After` (a 429): every bucket the call took waits that long, for every run and task
 * sharing it: the write that pushes them (a run's call gives it the transaction journaling its failure; a task, the
 * store before its failure is settled), or undefined when the failure carries none.
 *
 * @example await rateDeferral(new RetryAfterError('429', 2000), taken, await store.now())?.(store)
 */
export function rateDeferral(
  error: unknown,
  taken: RateUse[],
  now: number,
): ((tx: Store) => Promise<void>) | undefined {
  if (!(error instanceof RetryAfterError) || taken.length === 0) return undefined;
  const until = now + error.retryAfterMs;
  return async (tx) => {
    for (const t of taken) await tx.rateDefer({ name: t.name, key: t.key, until });
  };
}
