import { describe, expect, it } from 'vitest';
import { rateExtra, rateReason, rateUses } from './rate.js';

describe("a step's rate limits", () => {
  it('reads one use or a list, naming the bad field', () => {
    expect(rateUses(undefined, 'step(s).rateLimit')).toEqual([]);
    expect(rateUses({ name: 'a' }, 'step(s).rateLimit')).toEqual([{ name: 'a' }]);
    expect(() => rateUses({ name: 'a', units: 0 }, 'step(s).rateLimit')).toThrow(
      'step(s).rateLimit.units: must be a positive number (got 0)',
    );
    expect(() => rateUses([{ name: 'a' }, { name: '' }], 'step(s).rateLimit')).toThrow(
      'step(s).rateLimit[1].name: must name a limit',
    );
  });

  it('charges only what a call used past the units it took', () => {
    const uses = [{ name: 't', units: 5, charge: (o: { n: number }) => o.n }, { name: 'c' }];
    const taken = [
      { name: 't', key: '', units: 5 },
      { name: 'c', key: '', units: 1 },
    ];
    expect(rateExtra(uses, taken, { n: 12 })).toEqual([{ name: 't', key: '', units: 7 }]);
    expect(rateExtra(uses, taken, { n: 3 })).toEqual([]);
  });

  it('says which limit a run waits for, and when its next slot is', () => {
    expect(rateReason('openai', '', Date.UTC(2026, 0, 1, 12, 1, 3))).toBe(
      'rate limit openai — next slot 2026-01-01T12:01:03.000Z',
    );
    expect(rateReason('per-user', '42', 0)).toMatch(/^rate limit per-user:42 — /);
  });
});
