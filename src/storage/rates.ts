/**
 * Named rate limits in the store: their definitions, one bucket per (name, key), and the takes.
 * A bucket is GCRA's theoretical arrival time (`tat`): a unit costs `period / limit` ms, and a
 * take of `units` is allowed when `max(tat, now) + units × cost - period ≤ now`, so up to `limit`
 * units go at once (the burst) and then one unit per cost. Both dialects share this arithmetic and
 * read and write a bucket in one transaction holding its row, on the database clock.
 */

/** A named limit as stored. */
export interface RateLimitRow {
  name: string;
  /** Units per period. */
  limit: number;
  periodMs: number;
  /** The key expression or constant giving one bucket per key; null: one bucket. */
  key: string | null;
  createdAt: number;
  updatedAt: number;
}

/** One limit a take draws on: `key` is resolved already ('' for a limit without keys). */
export interface RateUse {
  name: string;
  key: string;
  units: number;
}

/**
 * What a take found. `ok`: every bucket was charged. Else none was: `retryAt` is when the slowest
 * bucket (`name`, `key`) has room (database clock), or null when it never will (`refused` says why:
 * no limit of that name, or more units than its limit).
 */
export type RateTakeResult =
  | { ok: true }
  | { ok: false; name: string; key: string; retryAt: number }
  | { ok: false; name: string; key: string; retryAt: null; refused: string };

/** The bucket's new arrival time if `units` are taken now, and whether that is allowed. */
export function gcra(
  tat: number,
  now: number,
  units: number,
  limit: number,
  periodMs: number,
): { tat: number; allowed: boolean; retryAt: number } {
  const next = Math.max(tat, now) + (units * periodMs) / limit;
  // float slack: a wake-up at the exact slot must find it free
  const retryAt = Math.ceil(next - periodMs - 1e-6);
  return { tat: next, allowed: retryAt <= now, retryAt };
}

/** The arrival time that makes `until` the bucket's next free slot for one unit (a downstream's Retry-After). */
export function deferredTat(tat: number, until: number, limit: number, periodMs: number): number {
  return Math.max(tat, until + periodMs - periodMs / limit);
}

/** Takes older than this are forgotten: a run asking again that late has journaled its answer long ago. */
export const TAKE_KEPT_MS = 24 * 3_600_000;

/** The answer recorded for a take id, as its row holds it. */
export function recordedTake(row: {
  ok: number | boolean;
  retry_at: number | string | null;
  name: string | null;
  key: string | null;
}): RateTakeResult {
  if (row.ok === true || row.ok === 1) return { ok: true };
  const base = { ok: false as const, name: row.name ?? '', key: row.key ?? '' };
  return row.retry_at === null
    ? { ...base, retryAt: null, refused: 'refused' }
    : { ...base, retryAt: Number(row.retry_at) };
}
