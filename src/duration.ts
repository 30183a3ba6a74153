import { ValidationError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** A duration as ms, or a string like `200ms`, `10s`, `5m`, `1h`, `2d`, `1.5h`. */
export type Duration = number | string;

/**
 * Milliseconds in `duration`; a ValidationError names `path` when it is not one.
 *
 * @example toMs('1.5h') // 5400000
 */
export function toMs(duration: Duration, path = 'duration'): number {
  if (typeof duration === 'number') {
    if (Number.isFinite(duration) && duration >= 0) return duration;
    throw new ValidationError(path, `must be ≥ 0 ms (got ${duration})`);
  }
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/.exec(String(duration).trim());
  if (!match)
    throw new ValidationError(
      path,
      `must be a number of ms or a string like '200ms', '10s', '5m', '1h', '2d' (got '${duration}')`,
    );
  return Math.round(Number(match[1]) * UNITS[match[2]!]!);
}
