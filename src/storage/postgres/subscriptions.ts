import { LeaseLostError, NotFoundError } from '../../errors.js';
import type { Cursor, ParkedEvent, ParkedStatus, StoredEvent, Subscription } from '../store.js';
import { prepared, type Db } from './connection.js';
import { HEAD } from './events.js';
import { asParsed, toParked, toSubscription, type ParkedRow, type SubscriptionRow } from '../rows.js';

export async function subscriptionGet(db: Db, p: { name: string }): Promise<Subscription> {
  const [row] = await db.rows<SubscriptionRow>('SELECT * FROM subscriptions WHERE name = $1', [p.name]);
  if (!row) throw new NotFoundError(`subscription ${p.name} not found`);
  return toSubscription(row, asParsed);
}

export async function subscriptionEnsure(
  db: Db,
  p: { name: string; streamPrefix: string | null; types: string[] | null; ordered: boolean; from: 'beginning' | 'end' },
): Promise<Subscription> {
  const [row] = await db.rows<SubscriptionRow>(
    `INSERT INTO subscriptions (name, cursor, stream_prefix, types, ordered, created_at, updated_at)
     VALUES ($1, CASE WHEN $2::boolean THEN ${HEAD} ELSE '' END, $3, $4::jsonb, $5, rl_now_ms(), rl_now_ms())
     ON CONFLICT (name) DO NOTHING RETURNING *`,
    [p.name, p.from === 'end', p.streamPrefix, p.types ? JSON.stringify(p.types) : null, p.ordered],
  );
  // Not created: a separate statement, whose fresh snapshot sees a row a concurrent ensure just committed.
  return row ? toSubscription(row, asParsed) : subscriptionGet(db, p);
}

const LEASE = prepared(
  'subscription_lease',
  `WITH now AS MATERIALIZED (SELECT rl_now_ms() AS ms)
   UPDATE subscriptions SET owner = $1, lease_expires_at = (SELECT ms FROM now) + $2
   WHERE name = $3 AND (owner IS NULL OR owner = $1 OR lease_expires_at < (SELECT ms FROM now)) RETURNING *`,
);

export async function subscriptionLease(
  db: Db,
  p: { name: string; owner: string; ttlMs: number },
): Promise<Subscription | null> {
  const [row] = await db.rows<SubscriptionRow>(LEASE, [p.owner, p.ttlMs, p.name]);
  if (row) return toSubscription(row, asParsed);
  await subscriptionGet(db, p);
  return null;
}

export async function subscriptionRelease(db: Db, p: { name: string; owner: string }): Promise<void> {
  await db.rows('UPDATE subscriptions SET owner = NULL, lease_expires_at = NULL WHERE name = $1 AND owner = $2', [
    p.name,
    p.owner,
  ]);
}

const ADVANCE = prepared(
  'subscription_advance',
  'UPDATE subscriptions SET cursor = $1, updated_at = rl_now_ms() WHERE name = $2 AND owner = $3 RETURNING name',
);

export async function subscriptionAdvance(db: Db, p: { name: string; owner: string; cursor: Cursor }): Promise<void> {
  const rows = await db.rows(ADVANCE, [p.cursor, p.name, p.owner]);
  if (rows.length === 0) throw new LeaseLostError(`subscription ${p.name} is no longer held by ${p.owner}`);
}

export async function subscriptionBlock(
  db: Db,
  p: { name: string; blockedReason: string | null },
): Promise<Subscription> {
  const [row] = await db.rows<SubscriptionRow>(
    'UPDATE subscriptions SET blocked_reason = $1, updated_at = rl_now_ms() WHERE name = $2 RETURNING *',
    [p.blockedReason, p.name],
  );
  if (!row) throw new NotFoundError(`subscription ${p.name} not found`);
  return toSubscription(row, asParsed);
}

export async function subscriptionList(db: Db): Promise<Subscription[]> {
  return (await db.rows<SubscriptionRow>('SELECT * FROM subscriptions ORDER BY name')).map((row) =>
    toSubscription(row, asParsed),
  );
}

export async function parkedAdd(
  db: Db,
  p: { subscription: string; event: StoredEvent; error: string; attempts: number },
): Promise<void> {
  await db.rows(
    `INSERT INTO parked (subscription, position, event, error, attempts, status, parked_at, updated_at)
     VALUES ($1, $2, $3::jsonb, $4, $5, 'parked', rl_now_ms(), rl_now_ms())
     ON CONFLICT (subscription, position) DO UPDATE SET error = excluded.error, attempts = parked.attempts + excluded.attempts,
       status = 'parked', updated_at = excluded.updated_at`,
    [p.subscription, p.event.position, JSON.stringify(p.event), p.error, p.attempts],
  );
}

export async function parkedList(db: Db, p: { subscription: string; status?: ParkedStatus }): Promise<ParkedEvent[]> {
  const rows = await db.rows<ParkedRow>(
    'SELECT * FROM parked WHERE subscription = $1 AND ($2::text IS NULL OR status = $2) ORDER BY position',
    [p.subscription, p.status ?? null],
  );
  return rows.map((row) => toParked(row, asParsed));
}

export async function parkedSetStatus(
  db: Db,
  p: { subscription: string; position: number; status: ParkedStatus; error?: string },
): Promise<ParkedEvent> {
  const [row] = await db.rows<ParkedRow>(
    `UPDATE parked SET status = $1, error = coalesce($2, error), updated_at = rl_now_ms()
     WHERE subscription = $3 AND position = $4 RETURNING *`,
    [p.status, p.error ?? null, p.subscription, p.position],
  );
  if (!row) throw new NotFoundError(`no parked event at position ${p.position} for subscription ${p.subscription}`);
  return toParked(row, asParsed);
}
