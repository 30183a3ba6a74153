import { describe, expect, it } from 'vitest';
import { deferredTat, gcra } from './rates.js';

describe('GCRA', () => {
  it('allows a burst of the limit at once, then one unit per period / limit', () => {
    let tat = 0;
    const take = (now: number, units = 1) => {
      const g = gcra(tat, now, units, 4, 1000);
      if (g.allowed) tat = g.tat;
      return g;
    };
    for (let i = 0; i < 4; i++) expect(take(10_000).allowed).toBe(true);
    expect(take(10_000)).toMatchObject({ allowed: false, retryAt: 10_250 });
    expect(take(10_249).allowed).toBe(false);
    expect(take(10_250).allowed).toBe(true);
    // two units need two slots
    expect(take(10_500, 2)).toMatchObject({ allowed: false, retryAt: 10_750 });
    expect(take(10_750, 2).allowed).toBe(true);
  });

  it('finds room at the exact slot despite fractional unit costs', () => {
    const g = gcra(0, 0, 3, 3, 1000);
    expect(g.allowed).toBe(true);
    const next = gcra(g.tat, 0, 1, 3, 1000);
    expect(next.allowed).toBe(false);
    expect(gcra(g.tat, next.retryAt, 1, 3, 1000).allowed).toBe(true);
  });

  it('makes a deferral the next free slot, never an earlier one', () => {
    const tat = deferredTat(0, 5000, 10, 1000);
    expect(gcra(tat, 4999, 1, 10, 1000).allowed).toBe(false);
    expect(gcra(tat, 5000, 1, 10, 1000).allowed).toBe(true);
    expect(deferredTat(99_000, 5000, 10, 1000)).toBe(99_000);
  });
});
