import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { parseDefinition } from './schema.js';
import { ttlMs } from './ttl.js';

const withTtl = (ttl: unknown) => ({ name: 't', ttl, steps: [{ id: 'a', type: 'log', config: { message: 'hi' } }] });

function problems(input: unknown): { path: string; message: string }[] {
  try {
    parseDefinition(input);
  } catch (error) {
    if (error instanceof ValidationError) return error.problems;
    throw error;
  }
  return [];
}

describe("a definition's ttl (default retention of its executions)", () => {
  it.each([
    ['1h', 3_600_000],
    ['72h', 72 * 3_600_000],
    ['30d', 30 * 86_400_000],
    ['10y', 3650 * 86_400_000],
  ])('takes %s', (ttl, ms) => {
    expect(problems(withTtl(ttl))).toEqual([]);
    expect(parseDefinition(withTtl(ttl)).ttl).toBe(ttl);
    expect(ttlMs(ttl)).toBe(ms);
  });

  it.each([
    ['30m', 'must be a whole number of hours, days or years, such as "72h", "30d" or "1y"'],
    ['1.5d', 'must be a whole number of hours, days or years, such as "72h", "30d" or "1y"'],
    ['0h', 'must be from 1h to 10y'],
    ['11y', 'must be from 1h to 10y'],
    ['3651d', 'must be from 1h to 10y'],
  ])('refuses %s, naming ttl', (ttl, message) => {
    expect(problems(withTtl(ttl))).toEqual([{ path: 'ttl', message }]);
  });

  it('refuses a number, naming ttl', () => {
    expect(problems(withTtl(86_400_000)).map((p) => p.path)).toEqual(['ttl']);
  });

  it('is optional', () => {
    expect(
      parseDefinition({ name: 't', steps: [{ id: 'a', type: 'log', config: { message: 'hi' } }] }).ttl,
    ).toBeUndefined();
  });
});
