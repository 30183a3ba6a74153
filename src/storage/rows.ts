import type { EventMetadata, ParkedEvent, ParkedStatus, StoredEvent, Subscription, Task, TaskState } from './store.js';

/**
 * Rows as both dialects return them, and their mapping to the Store's types. The drivers differ in
 * one thing: SQLite hands JSON columns back as text, PostgreSQL already parsed; `json` says which.
 */
export type Json = (value: unknown) => any;

/** PostgreSQL: JSON columns arrive parsed. */
export const asParsed: Json = (value) => value;

/** SQLite: JSON columns arrive as text. */
export const fromText: Json = (value) => (value === null ? null : JSON.parse(value as string));

export interface EventRow {
  position: number;
  stream_id: string;
  version: number;
  type: string;
  data: unknown;
  metadata: unknown;
  created_at: number;
}

export function toEvent(row: EventRow, json: Json): StoredEvent {
  return {
    position: row.position,
    streamId: row.stream_id,
    version: row.version,
    type: row.type,
    data: json(row.data),
    metadata: json(row.metadata) as EventMetadata,
    timestamp: row.created_at,
  };
}

export interface TaskRow {
  seq: number;
  id: string;
  queue: string;
  state: TaskState;
  payload: unknown;
  idempotency_key: string | null;
  ordering_key: string | null;
  run_at: number;
  priority: number;
  attempts: number;
  max_attempts: number;
  lease_token: string | null;
  lease_expires_at: number | null;
  worker_id: string | null;
  last_error: string | null;
  result: unknown;
  created_at: number;
  updated_at: number;
  tag?: string | null;
  claimed_at?: number | null;
  concurrency_key?: string | null;
  concurrency_limit?: number | null;
  fair_group?: string | null;
  fair_at?: number | null;
  /** jsonb on PostgreSQL, JSON text on SQLite */
  rate_limit?: unknown;
}

export function toTask(row: TaskRow, json: Json): Task {
  return {
    id: row.id,
    queue: row.queue,
    state: row.state,
    payload: json(row.payload),
    idempotencyKey: row.idempotency_key,
    orderingKey: row.ordering_key,
    runAt: row.run_at,
    priority: row.priority,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    leaseToken: row.lease_token,
    leaseExpiresAt: row.lease_expires_at,
    workerId: row.worker_id,
    lastError: row.last_error,
    result: json(row.result),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    tag: row.tag ?? null,
    claimedAt: row.claimed_at ?? null,
    ...(row.concurrency_key ? { concurrency: { key: row.concurrency_key, limit: row.concurrency_limit! } } : {}),
    ...(row.fair_group ? { fairBy: row.fair_group } : {}),
    ...(row.rate_limit ? { rateLimit: json(row.rate_limit) as Task['rateLimit'] } : {}),
  };
}

export interface SubscriptionRow {
  name: string;
  cursor: string;
  stream_prefix: string | null;
  types: unknown;
  /** 0/1 in SQLite */
  ordered: boolean | number;
  blocked_reason: string | null;
  owner: string | null;
  lease_expires_at: number | null;
  updated_at: number;
}

export function toSubscription(row: SubscriptionRow, json: Json): Subscription {
  return {
    name: row.name,
    cursor: row.cursor,
    streamPrefix: row.stream_prefix,
    types: json(row.types),
    ordered: Boolean(row.ordered),
    blockedReason: row.blocked_reason,
    owner: row.owner,
    leaseExpiresAt: row.lease_expires_at,
    updatedAt: row.updated_at,
  };
}

export interface ParkedRow {
  subscription: string;
  position: number;
  event: unknown;
  error: string;
  attempts: number;
  status: ParkedStatus;
  parked_at: number;
  updated_at: number;
}

export function toParked(row: ParkedRow, json: Json): ParkedEvent {
  return {
    subscription: row.subscription,
    position: row.position,
    event: json(row.event),
    error: row.error,
    attempts: row.attempts,
    status: row.status,
    parkedAt: row.parked_at,
    updatedAt: row.updated_at,
  };
}
