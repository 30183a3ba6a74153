import {
  deferredTat,
  gcra,
  recordedTake,
  TAKE_KEPT_MS,
  type RateLimitRow,
  type RateTakeResult,
  type RateUse,
} from '../rates.js';
import type { Db } from './connection.js';

interface LimitRow {
  name: string;
  limit_count: number;
  period_ms: string | number;
  key_expr: string | null;
  created_at: string | number;
  updated_at: string | number;
}

function limitOf(r: LimitRow): RateLimitRow {
  return {
    name: r.name,
    limit: r.limit_count,
    periodMs: Number(r.period_ms),
    key: r.key_expr,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export async function rateLimitPut(
  db: Db,
  p: { name: string; limit: number; periodMs: number; key: string | null },
): Promise<RateLimitRow> {
  const [row] = await db.rows<LimitRow>(
    `INSERT INTO rate_limits (name, limit_count, period_ms, key_expr) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO UPDATE SET limit_count = excluded.limit_count, period_ms = excluded.period_ms,
       key_expr = excluded.key_expr, updated_at = rl_now_ms()
     RETURNING *`,
    [p.name, p.limit, p.periodMs, p.key],
  );
  return limitOf(row!);
}

export async function rateLimitGet(db: Db, p: { name: string }): Promise<RateLimitRow | undefined> {
  const [row] = await db.rows<LimitRow>('SELECT * FROM rate_limits WHERE name = $1', [p.name]);
  return row && limitOf(row);
}

export async function rateLimitList(db: Db): Promise<RateLimitRow[]> {
  return (await db.rows<LimitRow>('SELECT * FROM rate_limits ORDER BY name')).map(limitOf);
}

export async function rateLimitDelete(db: Db, p: { name: string }): Promise<boolean> {
  await db.rows('DELETE FROM rate_buckets WHERE name = $1', [p.name]);
  return (await db.rows('DELETE FROM rate_limits WHERE name = $1 RETURNING name', [p.name])).length === 1;
}

interface Held {
  tat: number;
  now: number;
  limit: LimitRow | null;
}

/** The bucket's row, made if new, and held (FOR UPDATE) until the transaction ends; its limit; the database clock. */
async function hold(db: Db, use: { name: string; key: string }): Promise<Held> {
  const [limit] = await db.rows<LimitRow>('SELECT * FROM rate_limits WHERE name = $1', [use.name]);
  if (!limit) return { tat: 0, now: 0, limit: null };
  await db.rows('INSERT INTO rate_buckets (name, key, tat) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING', [
    use.name,
    use.key,
  ]);
  const [row] = await db.rows<{ tat: number; now: string }>(
    'SELECT tat, rl_now_ms() AS now FROM rate_buckets WHERE name = $1 AND key = $2 FOR UPDATE',
    [use.name, use.key],
  );
  return { tat: Number(row!.tat), now: Number(row!.now), limit };
}

/** In the caller's transaction: the bucket rows stay held until it ends, so takers in every process take turns. */
export async function rateTake(db: Db, p: { takeId?: string; uses: RateUse[] }): Promise<RateTakeResult> {
  if (p.takeId !== undefined) {
    const [seen] = await db.rows<{ ok: boolean; retry_at: string | null; name: string | null; key: string | null }>(
      'SELECT ok, retry_at, name, key FROM rate_takes WHERE take_id = $1',
      [p.takeId],
    );
    if (seen) return recordedTake(seen);
  }
  // one order for every taker: two takes of the same buckets never wait on each other's rows
  const uses = [...p.uses].sort((a, b) => (a.name + '\0' + a.key < b.name + '\0' + b.key ? -1 : 1));
  const next: Array<{ use: RateUse; tat: number }> = [];
  let blocked: { name: string; key: string; retryAt: number } | null = null;
  for (const use of uses) {
    const held = await hold(db, use);
    const limit = held.limit;
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
    const g = gcra(held.tat, held.now, use.units, limit.limit_count, Number(limit.period_ms));
    if (!g.allowed && (!blocked || g.retryAt > blocked.retryAt))
      blocked = { name: use.name, key: use.key, retryAt: g.retryAt };
    next.push({ use, tat: g.tat });
  }
  if (!blocked)
    for (const n of next)
      await db.rows('UPDATE rate_buckets SET tat = $3 WHERE name = $1 AND key = $2', [n.use.name, n.use.key, n.tat]);
  if (p.takeId !== undefined) {
    await db.rows(
      `DELETE FROM rate_takes WHERE take_id IN
       (SELECT take_id FROM rate_takes WHERE created_at < rl_now_ms() - $1 LIMIT 100)`,
      [TAKE_KEPT_MS],
    );
    await db.rows('INSERT INTO rate_takes (take_id, ok, retry_at, name, key) VALUES ($1, $2, $3, $4, $5)', [
      p.takeId,
      !blocked,
      blocked?.retryAt ?? null,
      blocked?.name ?? null,
      blocked?.key ?? null,
    ]);
  }
  return blocked ? { ok: false, ...blocked } : { ok: true };
}

/** Pushes the bucket's next free slot to `until` at the earliest (a 429's Retry-After); unknown limits are left. */
export async function rateDefer(db: Db, p: { name: string; key: string; until: number }): Promise<void> {
  const held = await hold(db, p);
  if (!held.limit) return;
  const tat = deferredTat(held.tat, p.until, held.limit.limit_count, Number(held.limit.period_ms));
  await db.rows('UPDATE rate_buckets SET tat = $3 WHERE name = $1 AND key = $2', [p.name, p.key, tat]);
}

/** Charges `units` more to the bucket whatever its room (what a call really used, known after it). */
export async function rateCharge(db: Db, p: RateUse): Promise<void> {
  const held = await hold(db, p);
  if (!held.limit || p.units <= 0) return;
  const g = gcra(held.tat, held.now, p.units, held.limit.limit_count, Number(held.limit.period_ms));
  await db.rows('UPDATE rate_buckets SET tat = $3 WHERE name = $1 AND key = $2', [p.name, p.key, g.tat]);
}
