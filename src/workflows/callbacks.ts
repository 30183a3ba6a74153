import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { runStream } from '../runtime/history.js';
import { isTerminal } from '../runtime/view.js';

/**
 * The one-time URLs of `wait_for_callback` steps: `<base>/callbacks/<execution>.<step>.<mac>`. The
 * MAC (HMAC-SHA256 under a key derived from the secrets key) makes the token unguessable without
 * storing it, and the same on every replay. The first POST completes the step (a signal whose
 * idempotency key is the token); a second one, or one after the step timed out or the execution
 * ended, is refused with 409.
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

  /** Completes the step the token belongs to with `body`. */
  async complete(token: string, body: unknown): Promise<{ execution_id: string; step_id: string; status: 'completed' }> {
    const [executionId = '', stepId = '', mac = ''] = token.split('.');
    const expected = Buffer.from(this.mac(executionId, stepId));
    const given = Buffer.from(mac);
    if (token.split('.').length !== 3 || given.length !== expected.length || !timingSafeEqual(given, expected)) throw new NotFoundError('no such callback');
    const view = await this.engine.runtime.view(executionId).catch(() => undefined);
    if (!view) throw new NotFoundError('no such callback');
    if (isTerminal(view.status)) throw new ConflictError(`callback refused: execution ${executionId} has ended (${view.status})`);
    const name = `callback:${stepId}`;
    const events = await this.engine.journal.readStream(runStream(executionId), { limit: 1_000_000 });
    const waits = events.filter((e) => (e.data as { name?: string }).name === name);
    if (waits.some((e) => e.type === 'wait.timed_out')) throw new ConflictError(`callback refused: step ${stepId} timed out`);
    const { duplicate } = await this.engine.runtime.signal(executionId, name, body ?? null, { idempotencyKey: `callback:${stepId}` });
    if (duplicate) throw new ConflictError(`callback of step ${stepId} was already used`);
    return { execution_id: executionId, step_id: stepId, status: 'completed' };
  }

  private mac(executionId: string, stepId: string): string {
    return createHmac('sha256', this.key).update(`${executionId}\n${stepId}`).digest('base64url');
  }
}
