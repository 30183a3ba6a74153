import {
  deferredTat,
  gcra,
  recordedTake,
  TAKE_KEPT_MS,
  type RateLimitRow,
  type RateTakeResult,
  type RateUse,
} from '../rates.js';
import type { Statements } from './connection.js';

interface LimitRow {
  name: string;
  limit_count: number;
  period_ms: number;
  key_expr: string | null;
  created_at: number;
  updated_at: number;
}

function limitOf(r: LimitRow): RateLimitRow {
  return {
    name: r.name,
    limit: r.limit_count,
    periodMs: r.period_ms,
    key: r.key_expr,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export function rateLimitPut(
  s: Statements,
  now: number,
  p: { name: string; limit: number; periodMs: number; key: string | null },
): RateLimitRow {
  const row = s
    .get(
      `INSERT INTO rate_limits (name, limit_count, period_ms, key_expr, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET limit_count = excluded.limit_count, period_ms = excluded.period_ms,
         key_expr = excluded.key_expr, updated_at = excluded.updated_at
       RETURNING *`,
    )
    .get(p.name, p.limit, p.periodMs, p.key, now, now) as LimitRow;
  return limitOf(row);
}

export function rateLimitGet(s: Statements, p: { name: string }): RateLimitRow | undefined {
  const row = s.get('SELECT * FROM rate_limits WHERE name = ?').get(p.name) as LimitRow | undefined;
  return row && limitOf(row);
}

export function rateLimitList(s: Statements): RateLimitRow[] {
  return (s.get('SELECT * FROM rate_limits ORDER BY name').all() as LimitRow[]).map(limitOf);
}

export function rateLimitDelete(s: Statements, p: { name: string }): boolean {
  s.get('DELETE FROM rate_buckets WHERE name = ?').run(p.name);
  return s.get('DELETE FROM rate_limits WHERE name = ?').run(p.name).changes === 1;
}

function tatOf(s: Statements, use: { name: string; key: string }): number {
  const row = s.get('SELECT tat FROM rate_buckets WHERE name = ? AND key = ?').get(use.name, use.key) as
    | { tat: number }
    | undefined;
  return row?.tat ?? 0;
}

function setTat(s: Statements, name: string, key: string, tat: number): void {
  s.get(
    `INSERT INTO rate_buckets (name, key, tat) VALUES (?, ?, ?)
     ON CONFLICT (name, key) DO UPDATE SET tat = excluded.tat`,
  ).run(name, key, tat);
}

/** Runs under the store's write lock (BEGIN IMMEDIATE): no other taker reads a bucket in between. */
export function rateTake(s: Statements, now: number, p: { takeId?: string; uses: RateUse[] }): RateTakeResult {
  if (p.takeId !== undefined) {
    const seen = s.get('SELECT ok, retry_at, name, key FROM rate_takes WHERE take_id = ?').get(p.takeId) as
      | { ok: number; retry_at: number | null; name: string | null; key: string | null }
      | undefined;
    if (seen) return recordedTake(seen);
  }
  const next: Array<{ use: RateUse; tat: number }> = [];
  let blocked: { name: string; key: string; retryAt: number } | null = null;
  for (const use of p.uses) {
    const limit = s.get('SELECT * FROM rate_limits WHERE name = ?').get(use.name) as LimitRow | undefined;
    if (!limit)
      return { ok: false, name: use.name, key: use.key, retryAt: null, refused: `no rate limit named '${use.name}'` };
    if (use.units > limit.limit_count)
      return {
        ok: false,
        name: use.name,
        key: use.key,
        retryAt: null,
        refused: `${use.units} units are more than the limit '${use.name}' allows in a period (${limit.limit_count})`,
      };
    const g = gcra(tatOf(s, use), now, use.units, limit.limit_count, limit.period_ms);
    if (!g.allowed && (!blocked || g.retryAt > blocked.retryAt))
      blocked = { name: use.name, key: use.key, retryAt: g.retryAt };
    next.push({ use, tat: g.tat });
  }
  if (!blocked) for (const n of next) setTat(s, n.use.name, n.use.key, n.tat);
  if (p.takeId !== undefined) {
    s.get(
      'DELETE FROM rate_takes WHERE take_id IN (SELECT take_id FROM rate_takes WHERE created_at < ? LIMIT 100)',
    ).run(now - TAKE_KEPT_MS);
    s.get('INSERT INTO rate_takes (take_id, ok, retry_at, name, key, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
      p.takeId,
      blocked ? 0 : 1,
      blocked?.retryAt ?? null,
      blocked?.name ?? null,
      blocked?.key ?? null,
      now,
    );
  }
  return blocked ? { ok: false, ...blocked } : { ok: true };
}

/** Pushes the bucket's next free slot to `until` at the earliest (a 429's Retry-After); unknown limits are left. */
export function rateDefer(s: Statements, p: { name: string; key: string; until: number }): void {
  const limit = s.get('SELECT * FROM rate_limits WHERE name = ?').get(p.name) as LimitRow | undefined;
  if (!limit) return;
  setTat(s, p.name, p.key, deferredTat(tatOf(s, p), p.until, limit.limit_count, limit.period_ms));
}

/** Charges `units` more to the bucket whatever its room (what a call really used, known after it). */
export function rateCharge(s: Statements, now: number, p: RateUse): void {
  const limit = s.get('SELECT * FROM rate_limits WHERE name = ?').get(p.name) as LimitRow | undefined;
  if (!limit || p.units <= 0) return;
  setTat(s, p.name, p.key, gcra(tatOf(s, p), now, p.units, limit.limit_count, limit.period_ms).tat);
}
