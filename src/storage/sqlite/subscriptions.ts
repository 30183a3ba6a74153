import { LeaseLostError, NotFoundError } from '../../errors.js';
import type { Cursor, ParkedEvent, ParkedStatus, StoredEvent, Subscription } from '../store.js';
import type { Statements } from './connection.js';
import { fromText, toParked, toSubscription, type ParkedRow, type SubscriptionRow } from '../rows.js';

export function subscriptionGet(s: Statements, p: { name: string }): Subscription {
  const row = s.get('SELECT * FROM subscriptions WHERE name = ?').get(p.name) as SubscriptionRow | undefined;
  if (!row) throw new NotFoundError(`subscription ${p.name} not found`);
  return toSubscription(row, fromText);
}

export function subscriptionEnsure(
  s: Statements,
  now: number,
  p: { name: string; streamPrefix: string | null; types: string[] | null; ordered: boolean; from: 'beginning' | 'end' },
  head: Cursor,
): Subscription {
  s.get(
    `INSERT INTO subscriptions (name, cursor, stream_prefix, types, ordered, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`,
  ).run(
    p.name,
    p.from === 'end' ? head : '',
    p.streamPrefix,
    p.types ? JSON.stringify(p.types) : null,
    p.ordered ? 1 : 0,
    now,
    now,
  );
  return subscriptionGet(s, p);
}

export function subscriptionLease(
  s: Statements,
  now: number,
  p: { name: string; owner: string; ttlMs: number },
): Subscription | null {
  const row = s
    .get(
      `UPDATE subscriptions SET owner = ?, lease_expires_at = ?
     WHERE name = ? AND (owner IS NULL OR owner = ? OR lease_expires_at < ?) RETURNING *`,
    )
    .get(p.owner, now + p.ttlMs, p.name, p.owner, now) as SubscriptionRow | undefined;
  if (row) return toSubscription(row, fromText);
  subscriptionGet(s, p);
  return null;
}

export function subscriptionRelease(s: Statements, p: { name: string; owner: string }): void {
  s.get('UPDATE subscriptions SET owner = NULL, lease_expires_at = NULL WHERE name = ? AND owner = ?').run(
    p.name,
    p.owner,
  );
}

export function subscriptionAdvance(
  s: Statements,
  now: number,
  p: { name: string; owner: string; cursor: Cursor },
): void {
  const changes = s
    .get('UPDATE subscriptions SET cursor = ?, updated_at = ? WHERE name = ? AND owner = ?')
    .run(p.cursor, now, p.name, p.owner).changes;
  if (changes === 0) throw new LeaseLostError(`subscription ${p.name} is no longer held by ${p.owner}`);
}

export function subscriptionBlock(
  s: Statements,
  now: number,
  p: { name: string; blockedReason: string | null },
): Subscription {
  const row = s
    .get('UPDATE subscriptions SET blocked_reason = ?, updated_at = ? WHERE name = ? RETURNING *')
    .get(p.blockedReason, now, p.name) as SubscriptionRow | undefined;
  if (!row) throw new NotFoundError(`subscription ${p.name} not found`);
  return toSubscription(row, fromText);
}

export function subscriptionList(s: Statements): Subscription[] {
  return (s.get('SELECT * FROM subscriptions ORDER BY name').all() as SubscriptionRow[]).map((row) =>
    toSubscription(row, fromText),
  );
}

export function parkedAdd(
  s: Statements,
  now: number,
  p: { subscription: string; event: StoredEvent; error: string; attempts: number },
): void {
  s.get(
    `INSERT INTO parked (subscription, position, event, error, attempts, status, parked_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'parked', ?, ?)
     ON CONFLICT (subscription, position) DO UPDATE SET error = excluded.error, attempts = parked.attempts + excluded.attempts,
       status = 'parked', updated_at = excluded.updated_at`,
  ).run(p.subscription, p.event.position, JSON.stringify(p.event), p.error, p.attempts, now, now);
}

export function parkedList(s: Statements, p: { subscription: string; status?: ParkedStatus }): ParkedEvent[] {
  const rows = s
    .get(
      'SELECT * FROM parked WHERE subscription = @subscription AND (@status IS NULL OR status = @status) ORDER BY position',
    )
    .all({ subscription: p.subscription, status: p.status ?? null });
  return (rows as ParkedRow[]).map((row) => toParked(row, fromText));
}

export function parkedSetStatus(
  s: Statements,
  now: number,
  p: { subscription: string; position: number; status: ParkedStatus; error?: string },
): ParkedEvent {
  const row = s
    .get(
      'UPDATE parked SET status = ?, error = coalesce(?, error), updated_at = ? WHERE subscription = ? AND position = ? RETURNING *',
    )
    .get(p.status, p.error ?? null, now, p.subscription, p.position) as ParkedRow | undefined;
  if (!row) throw new NotFoundError(`no parked event at position ${p.position} for subscription ${p.subscription}`);
  return toParked(row, fromText);
}
