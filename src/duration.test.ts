import { describe, expect, it } from 'vitest';
import { toMs } from './duration.js';

describe('toMs', () => {
  it('reads numbers and unit strings', () => {
    expect([toMs(5), toMs('200ms'), toMs('10s'), toMs('5m'), toMs('1.5h'), toMs('2d')]).toEqual([
      5, 200, 10_000, 300_000, 5_400_000, 172_800_000,
    ]);
  });

  it('names the field of a bad duration', () => {
    expect(() => toMs('soon', 'timeout')).toThrow(/^timeout: must be a number of ms or a string/);
    expect(() => toMs(-1, 'retry.backoff.base')).toThrow(/^retry\.backoff\.base: must be ≥ 0/);
  });
});
