import { ValidationError } from '../../errors.js';
import type { Journal } from '../../journal/journal.js';
import type { TaskQueue } from '../../queue/queue.js';
import type { Store } from '../../storage/store.js';
import type { Blobs } from '../pass/blobs.js';
import type { Debounce, Throttle } from '../flow.js';
import type { Workflow } from '../workflow.js';
import { checkFlow } from '../flow-check.js';
import type { StartOptions } from './start.js';

/** What a throttled or debounced start needs of the runtime: its store, and a start of a run in a transaction. */
export interface DelayedHost {
  store: Store;
  journal: Journal;
  queue: TaskQueue;
  blobs: Blobs;
  /** Starts run `options.id` in `tx` (its `run.started` and its first pass, at `notBefore` if given). */
  begin(tx: Store, wf: Workflow, input: unknown, options: StartOptions & { id: string }): Promise<void>;
}

/**
 * The start's throttle or debounce (the start's own replacing its workflow's), checked; none for a start that
 * has neither. Both at once are refused: a debounced key starts one run per window already, and a throttle would
 * delay that one run's start past the window it closed.
 *
 * @example delayOf(wf, { debounce: { key: 'input.chat', period: '2s' } }) // { debounce: { … } }
 */
export function delayOf(wf: Workflow, options: StartOptions): { debounce: Debounce } | { throttle: Throttle } | null {
  const debounce = options.debounce ?? wf.flow?.debounce;
  const throttle = options.throttle ?? wf.flow?.throttle;
  if (debounce === undefined && throttle === undefined) return null;
  if (debounce !== undefined && throttle !== undefined)
    throw new ValidationError(
      'throttle',
      'cannot be combined with debounce: a debounced key starts one run per window already (use concurrency)',
    );
  const flow = checkFlow(debounce === undefined ? { throttle } : { debounce });
  return flow.debounce ? { debounce: flow.debounce } : { throttle: flow.throttle! };
}

/**
 * `<kind>:<workflow>:<key>`; a flow option with no key is one key for all runs of the workflow (`*`).
 *
 * @example delayStream('debounce', 'reply', 'chat-7') // 'debounce:reply:chat-7'
 */
export function delayStream(kind: 'throttle' | 'debounce', wf: string, key: string | null): string {
  return `${kind}:${wf}:${key ?? '*'}`;
}

/**
 * In the caller's transaction (nested: a run that exists leaves it whole), or in a new one.
 *
 * @example await within(store, options.tx, (tx) => tx.projectionGet({ name: 'throttle', key }))
 */
export function within<T>(store: Store, tx: Store | undefined, work: (tx: Store) => Promise<T>): Promise<T> {
  return (tx ?? store).transaction(work);
}
