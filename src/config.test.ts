import { describe, expect, it } from 'vitest';
import { resolveConfig } from './config.js';

describe('resolveConfig', () => {
  it('fills the defaults and freezes the result', () => {
    const config = resolveConfig({ database: 'postgres://localhost/app' });
    expect(config).toEqual({
      database: 'postgres://localhost/app',
      maxPayloadBytes: 1_048_576,
      maxEventBytes: 1_048_576,
      maxEventsPerAppend: 100_000,
      defaultMaxAttempts: 5,
      pollMs: 1000,
      leaseMs: 30_000,
      runConcurrency: 10,
      blobThresholdBytes: 262_144,
      maxValueBytes: 268_435_456,
      replayCacheRuns: 500,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names the field of a bad value', () => {
    expect(() => resolveConfig({ leaseMs: 0 })).toThrow('leaseMs: must be a whole number ≥ 1 (got 0)');
    expect(() => resolveConfig({ runConcurrency: 2.5 })).toThrow(/^runConcurrency:/);
    expect(() => resolveConfig({ database: '' })).toThrow(/^database:/);
    expect(() => resolveConfig({ replayCacheRuns: -1 })).toThrow(
      'replayCacheRuns: must be a whole number ≥ 0 (got -1)',
    );
    expect(resolveConfig({ replayCacheRuns: 0 }).replayCacheRuns).toBe(0);
    expect(() => resolveConfig({ blobThresholdBytes: 0 })).toThrow(/^blobThresholdBytes:/);
  });
});
