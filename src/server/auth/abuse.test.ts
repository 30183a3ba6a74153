import { describe, expect, it } from 'vitest';
import { FAILURE_WINDOW_MS, FailedLogins, MAX_FAILURES } from './abuse.js';

describe('FailedLogins', () => {
  it('slows an address past the limit until its window ends, telling once', () => {
    let now = 1_000_000;
    const told: Array<[string, number]> = [];
    const failures = new FailedLogins(
      (address, n) => told.push([address, n]),
      () => now,
    );
    for (let i = 0; i < MAX_FAILURES; i++) failures.fail('10.0.0.1');
    expect(failures.retryAfter('10.0.0.1')).toBe(0);
    failures.fail('10.0.0.1');
    expect(failures.retryAfter('10.0.0.1')).toBe(FAILURE_WINDOW_MS / 1000);
    expect(failures.retryAfter('10.0.0.2')).toBe(0);
    failures.fail('10.0.0.1');
    expect(told).toEqual([['10.0.0.1', MAX_FAILURES + 1]]);
    now += FAILURE_WINDOW_MS / 2;
    expect(failures.retryAfter('10.0.0.1')).toBe(FAILURE_WINDOW_MS / 2000);
    now += FAILURE_WINDOW_MS / 2;
    expect(failures.retryAfter('10.0.0.1')).toBe(0);
    failures.fail('10.0.0.1');
    expect(failures.retryAfter('10.0.0.1')).toBe(0);
  });
});
