import { createHmac, timingSafeEqual } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Engine } from '../engine.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { publicUrlFor } from '../public-url.js';
import { runStream } from '../runtime/pass/history.js';
import { isTerminal } from '../runtime/read/view.js';
import { RUN_EVENT } from '../runtime/events.js';

/**
 * The one-time URLs of `wait_for_callback` steps: `<base>/callbacks/<execution>.<step>.<mac>`, the
 * base being the public URL (RUNLEDGER_PUBLIC_URL, or a loopback server's own). The MAC
 * (HMAC-SHA256 under a key derived from the secrets key) makes the token unguessable without
 * storing it, and the same on every replay. The first POST completes the step (a signal with an
 * idempotency key of its own). Webhook senders retry until they see a 2xx, so a delivery must get
 * the same answer every time: a repeat of the body that completed the step answers `duplicate`,
 * even after the execution ended; a different body is a conflict (409: the step has its result and
 * this one was not taken), as is any POST after the step timed out or the execution ended without it.
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
    /** Without one, `url` throws a TerminalError naming RUNLEDGER_PUBLIC_URL: never a relative URL. */
    private readonly baseUrl?: string,
  ) {
    this.key = createHmac('sha256', secretKey).update('runledger callback tokens').digest();
  }

  url(executionId: string, stepId: string): string {
    const base = this.baseUrl?.replace(/\/+$/, '');
    return publicUrlFor(
      base,
      `/callbacks/${executionId}.${stepId}.${this.mac(executionId, stepId)}`,
      `wait_for_callback step ${stepId}`,
    );
  }

  /**
   * Completes the step the token belongs to with `body`. A repeat of the body that completed it
   * completes nothing and answers `duplicate`, at any time; another body to a used token, and any
   * to a token whose step timed out or whose execution ended without it, is a ConflictError.
   */
  async complete(
    token: string,
    body: unknown,
  ): Promise<{ execution_id: string; step_id: string; status: 'completed' | 'duplicate' }> {
    const parts = token.split('.');
    const [executionId = '', stepId = '', mac = ''] = parts;
    const expected = Buffer.from(this.mac(executionId, stepId));
    const given = Buffer.from(mac);
    if (parts.length !== 3 || given.length !== expected.length || !timingSafeEqual(given, expected))
      throw new NotFoundError('no such callback');
    const view = await this.engine.runtime.view(executionId).catch(() => undefined);
    if (!view) throw new NotFoundError('no such callback');
    const name = `callback:${stepId}`;
    const done = { execution_id: executionId, step_id: stepId };
    const events = await this.events(executionId, name);
    const sent = events.find((e) => e.type === RUN_EVENT.signalSent);
    if (sent) return { ...done, status: await this.repeated(sent.data, body, stepId) };
    if (isTerminal(view.status))
      throw new ConflictError(`callback refused: execution ${executionId} has ended (${view.status})`);
    if (events.some((e) => e.type === RUN_EVENT.waitTimedOut))
      throw new ConflictError(`callback refused: step ${stepId} timed out`);
    const { duplicate } = await this.engine.runtime.signal(executionId, name, body ?? null, { idempotencyKey: name });
    if (!duplicate) return { ...done, status: 'completed' };
    // another delivery won the race: this one is a repeat of it, or a conflict
    const won = (await this.events(executionId, name)).find((e) => e.type === RUN_EVENT.signalSent);
    return { ...done, status: await this.repeated(won?.data, body, stepId) };
  }

  private async events(executionId: string, name: string) {
    return (await this.engine.journal.readStream(runStream(executionId), { limit: 1_000_000 })).filter(
      (e) => (e.data as { name?: string }).name === name,
    );
  }

  /** `duplicate` when `body` is the one that completed the step (keys in any order: PostgreSQL's jsonb reorders them), else a ConflictError. */
  private async repeated(sent: unknown, body: unknown, stepId: string): Promise<'duplicate'> {
    const taken = await this.engine.runtime.blobs.resolve((sent as { payload?: unknown } | undefined)?.payload ?? null);
    if (isDeepStrictEqual(taken, body ?? null)) return 'duplicate';
    throw new ConflictError(`callback refused: step ${stepId} was already completed with a different body`);
  }

  private mac(executionId: string, stepId: string): string {
    return createHmac('sha256', this.key).update(`${executionId}\n${stepId}`).digest('base64url');
  }
}
