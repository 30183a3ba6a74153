import { iso } from '../../iso.js';
import type { NewEvent } from '../../storage/store.js';
import { RUN_EVENT } from '../events.js';
import type { History } from './history.js';

/**
 * The cancel request the engine itself journals when a run of an `onDeadline: 'cancel'` workflow reaches its
 * deadline (brief 004 §9.1, a system-initiated cancellation): `by: 'system'`, and a reason naming the limit.
 *
 * @example deadlineCancel(history) // { type: 'run.cancel_requested', data: { reason: 'timeout: …', by: 'system' } }
 */
export function deadlineCancel(history: History): NewEvent {
  const reason = `timeout: the run had not ended by its deadline (${iso(history.deadline)})`;
  return { type: RUN_EVENT.runCancelRequested, data: { reason, by: 'system' } };
}
