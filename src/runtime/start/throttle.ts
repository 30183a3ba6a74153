import { toMs } from '../../duration.js';
import { RUN_EVENT } from '../events.js';
import { resolveKey } from '../flow-check.js';
import type { Throttle } from '../flow.js';
import { runStream } from '../pass/history.js';
import type { Store } from '../../storage/store.js';
import type { Workflow } from '../workflow.js';
import { delayStream, within, type DelayedHost } from './delayed.js';
import type { StartOptions } from './start.js';

/** The next free slot of each throttled key (by its stream): the theoretical arrival time of its next start, ms. */
export const THROTTLE_SLOTS = 'throttle';

interface Slot {
  next: number;
}

/**
 * Starts run `options.id` under a throttle: at most `limit` starts per `period` per key, the rest delayed, never
 * dropped. The slots are a GCRA with no burst: starts of one key are spaced `period / limit` apart, so no window of
 * `period` ever holds more than `limit` of them (2 per 1 s: 0, 0.5 s, 1 s, 1.5 s …). The key's next slot is kept in
 * a projection, read and moved under the key's lock (the append of `throttle.started` to `throttle:<wf>:<key>`), in
 * the start's transaction: concurrent starts on any process take successive slots, each journaled on its run
 * (`run.throttled`). A run whose slot is later than now starts with its first pass at the slot (`notBefore`), and
 * shows `waiting`, "throttled until <iso>".
 *
 * @example await startThrottled(host, wf, { user: 'u1' }, { id }, { key: 'input.user', limit: 2, period: '1s' })
 */
export async function startThrottled(
  host: DelayedHost,
  wf: Workflow,
  input: unknown,
  options: StartOptions & { id: string },
  throttle: Throttle,
): Promise<void> {
  const key = throttle.key === undefined ? null : resolveKey(throttle.key, input, 'throttle.key');
  const stream = delayStream('throttle', wf.name, key);
  const spacing = toMs(throttle.period) / throttle.limit;
  await within(host.store, options.tx, async (tx) => {
    await host.journal.append(stream, [{ type: RUN_EVENT.throttleStarted, data: { run_id: options.id } }], { tx });
    const now = await tx.now();
    const taken = (await tx.projectionGet({ name: THROTTLE_SLOTS, key: stream })) as Slot | undefined;
    // an idle key's slot is now: a start finds no debt from long ago
    const next = Math.max(now, taken?.next ?? now);
    await tx.projectionPut({ name: THROTTLE_SLOTS, key: stream, value: { next: next + spacing } satisfies Slot });
    const slot = Math.ceil(next);
    // every start's slot is journaled; only a start whose slot is later than now waits for it
    const delayed = slot > now;
    const data = { until: slot, key: stream, ...(delayed ? { waitingFor: `throttled until ${iso(slot)}` } : {}) };
    await host.begin(tx, wf, input, {
      ...options,
      ...(delayed ? { notBefore: slot } : {}),
      also: async (tx) => {
        await host.journal.append(runStream(options.id), [{ type: RUN_EVENT.runThrottled, data }], { tx });
        await options.also?.(tx);
      },
    });
  });
}

/**
 * Whether throttled key `stream` holds a slot still to come: its next slot is later than `now`. A key whose next slot
 * has passed is as a key never seen (a start takes `now`), so its state may go (retention's `keys`).
 *
 * @example await throttleLive(tx, 'throttle:crm-sync:acme', await tx.now()) // false: idle
 */
export async function throttleLive(tx: Store, stream: string, now: number): Promise<boolean> {
  const taken = (await tx.projectionGet({ name: THROTTLE_SLOTS, key: stream })) as Slot | undefined;
  return taken !== undefined && taken.next > now;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
