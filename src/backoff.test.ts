import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  const policy = { baseMs: 100, factor: 2, maxMs: 1000, jitter: 0.2 };

  it('grows exponentially and stops at the cap', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffDelay(a, policy, mid))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads by at most the jitter fraction either way', () => {
    expect(backoffDelay(3, policy, () => 0)).toBe(320);
    expect(backoffDelay(3, policy, () => 1)).toBe(480);
    const seen = new Set(Array.from({ length: 50 }, () => backoffDelay(3, policy)));
    expect(seen.size).toBeGreaterThan(10);
    for (const delay of seen) expect(delay).toBeGreaterThanOrEqual(320), expect(delay).toBeLessThanOrEqual(480);
  });
});
