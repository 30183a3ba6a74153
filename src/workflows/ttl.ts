import { z } from 'zod';

const UNITS: Record<string, number> = { h: 3_600_000, d: 86_400_000, y: 365 * 86_400_000 };
const SHAPE = /^(\d+)(h|d|y)$/;
const MIN = UNITS.h!;
const MAX = 10 * UNITS.y!;

/** A definition's `ttl` ("30d") as ms: how long its finished executions are kept. */
export const ttlMs = (ttl: string): number => {
  const [, n, unit] = SHAPE.exec(ttl)!;
  return Number(n) * UNITS[unit!]!;
};

/**
 * A workflow's default retention: `"72h"`, `"30d"`, `"1y"`, from 1h to 10y. Retention's `runs` sweep
 * deletes the workflow's finished executions once they are older than it, instead of the policy's age.
 */
export const ttlSchema = z
  .string()
  .regex(SHAPE, 'must be a whole number of hours, days or years, such as "72h", "30d" or "1y"')
  .refine((ttl) => !SHAPE.test(ttl) || (ttlMs(ttl) >= MIN && ttlMs(ttl) <= MAX), 'must be from 1h to 10y')
  .describe(
    'how long finished executions of this workflow are kept ("30d"; 1h to 10y), overriding the retention policy\'s runs age',
  );
