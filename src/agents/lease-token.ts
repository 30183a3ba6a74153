import { randomBytes } from 'node:crypto';
import type { Journal } from '../journal/journal.js';
import { REMOTE_EVENT, remoteStream } from './remote-events.js';

/**
 * A new lease token for session `id`'s invocation, journaled before the agent is called: from
 * then on only it may write (an older invocation's writes get 409 lease_lost).
 *
 * @example const token = await issueLeaseToken(engine.journal, 'ses_1', 1); // 'lt_…'
 */
export async function issueLeaseToken(journal: Journal, id: string, attempt: number): Promise<string> {
  const token = `lt_${randomBytes(18).toString('base64url')}`;
  await journal.append(remoteStream(id), [{ type: REMOTE_EVENT.invoked, data: { token, attempt } }]);
  return token;
}
