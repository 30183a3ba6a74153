import { describe, expect, it } from 'vitest';
import { TimeoutError } from '../../errors.js';
import { runAttempt } from './calls.js';

const ctx = { idempotencyKey: 'k', attempt: 1 };
const never = () => new Promise<never>(() => {});

describe('one try of a step', () => {
  it('ends when the pass stops, with its reason, though the step never looked at its signal', async () => {
    const stop = new AbortController();
    const attempt = runAttempt(stop.signal, never, ctx);
    stop.abort(new Error('cancelled'));
    await expect(attempt).rejects.toThrow('cancelled');
  });

  it('hands a step that looks after the stop a signal already aborted with the reason', async () => {
    const stop = new AbortController();
    stop.abort(new Error('lease lost'));
    let seen: AbortSignal | null = null;
    const attempt = runAttempt(
      stop.signal,
      async ({ signal }) => {
        seen = signal;
        return never();
      },
      ctx,
    );
    await expect(attempt).rejects.toThrow('lease lost');
    expect(seen!.aborted).toBe(true);
    expect((seen!.reason as Error).message).toBe('lease lost');
  });

  it('fires the signal a step holds on timeout, once, and stops listening to the pass after', async () => {
    const stop = new AbortController();
    let fired = 0;
    const attempt = runAttempt(
      stop.signal,
      async ({ signal }) => {
        signal.addEventListener('abort', () => fired++);
        return never();
      },
      ctx,
      20,
    );
    await expect(attempt).rejects.toBeInstanceOf(TimeoutError);
    stop.abort(new Error('later'));
    expect(fired).toBe(1);
  });

  it('returns what the step returns', async () => {
    expect(await runAttempt(new AbortController().signal, async () => 7, ctx)).toBe(7);
  });
});
