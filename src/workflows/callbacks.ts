import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { runStream } from '../runtime/history.js';
import { isTerminal } from '../runtime/view.js';
import { RUN_EVENT } from '../runtime/events.js';

/**
 * The one-time URLs of `wait_for_callback` steps: `<base>/callbacks/<execution>.<step>.<mac>`. The
 * MAC (HMAC-SHA256 under a key derived from the secrets key) makes the token unguessable without
 * storing it, and the same on every replay. The first POST completes the step (a signal with an
 * idempotency key of its own); a repeat completes nothing and answers `duplicate`; one after the
 * step timed out or the execution ended is refused with 409.
 *
 * @example
 * const callbacks = new Callbacks(engine, secretKey, 'https://runledger.internal');
 * callbacks.url('ex_01J…', 'await_render') // 'https://runledger.internal/callbacks/ex_01J….await_render.3q…'
 */
export class Callbacks {
  private readonly key: Buffer;

  constructor(
    private readonly engine: Engine,
    secretKey: Buffer,
    private readonly baseUrl = '',
  ) {
    this.key = createHmac('sha256', secretKey).update('runledger callback tokens').digest();
  }

  url(executionId: string, stepId: string): string {
    return `${this.baseUrl.replace(/\/+$/, '')}/callbacks/${executionId}.${stepId}.${this.mac(executionId, stepId)}`;
  }

  /**
   * Completes the step the token belongs to with `body`. A repeat of a used token completes nothing
   * and answers `duplicate` (webhook senders retry until they see a 2xx); a token whose step timed
   * out, or whose execution ended without it, is a ConflictError.
   */
  async complete(token: string, body: unknown): Promise<{ execution_id: string; step_id: string; status: 'completed' | 'duplicate' }> {
    const parts = token.split('.');
    const [executionId = '', stepId = '', mac = ''] = parts;
    const expected = Buffer.from(this.mac(executionId, stepId));
    const given = Buffer.from(mac);
    if (parts.length !== 3 || given.length !== expected.length || !timingSafeEqual(given, expected)) throw new NotFoundError('no such callback');
    const view = await this.engine.runtime.view(executionId).catch(() => undefined);
    if (!view) throw new NotFoundError('no such callback');
    const name = `callback:${stepId}`;
    const done = { execution_id: executionId, step_id: stepId };
    const events = (await this.engine.journal.readStream(runStream(executionId), { limit: 1_000_000 })).filter((e) => (e.data as { name?: string }).name === name);
    if (events.some((e) => e.type === RUN_EVENT.signalSent)) return { ...done, status: 'duplicate' };
    if (isTerminal(view.status)) throw new ConflictError(`callback refused: execution ${executionId} has ended (${view.status})`);
    if (events.some((e) => e.type === RUN_EVENT.waitTimedOut)) throw new ConflictError(`callback refused: step ${stepId} timed out`);
    const { duplicate } = await this.engine.runtime.signal(executionId, name, body ?? null, { idempotencyKey: name });
    return { ...done, status: duplicate ? 'duplicate' : 'completed' };
  }

  private mac(executionId: string, stepId: string): string {
    return createHmac('sha256', this.key).update(`${executionId}\n${stepId}`).digest('base64url');
  }
}
