import { describe, expect, it } from 'vitest';
import { LazyAbort } from './abort.js';
import { prefetchFor } from './prefetch.js';

describe('prefetch', () => {
  it('holds up to its cap while handlers are fast, what the slots start within 25 ms as they slow, nothing from 100 ms', () => {
    // concurrency 10, the default cap of 40
    expect(prefetchFor(10, 40, 0)).toBe(40);
    expect(prefetchFor(10, 40, 5)).toBe(40);
    expect(prefetchFor(10, 40, 8)).toBe(31);
    // never fewer than the concurrency below 100 ms, as before the pace rule
    expect(prefetchFor(10, 40, 50)).toBe(10);
    expect(prefetchFor(10, 40, 99)).toBe(10);
    expect(prefetchFor(10, 40, 100)).toBe(0);
    // a cap the caller set wins
    expect(prefetchFor(10, 2, 0)).toBe(2);
    expect(prefetchFor(10, 0, 0)).toBe(0);
  });
});

describe("a task's abort signal", () => {
  it('is aborted with the reason whether the handler read it before or after the abort, and only once', () => {
    const early = new LazyAbort();
    const signal = early.signal;
    let fired = 0;
    signal.addEventListener('abort', () => fired++);
    early.abort('lost');
    early.abort('again');
    expect([signal.aborted, signal.reason, fired]).toEqual([true, 'lost', 1]);
    const late = new LazyAbort();
    late.abort('lost');
    expect([late.signal.aborted, late.signal.reason]).toEqual([true, 'lost']);
    expect(new LazyAbort().signal.aborted).toBe(false);
  });
});
