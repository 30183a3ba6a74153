import type { SubscriptionStats } from './maintenance.js';
import type { Cursor, StoredEvent } from './store-events.js';

/** Durable subscriptions of the journal: a leased cursor each, and the events they parked. */
export interface SubscriptionStore {
  /** Creates the subscription if it does not exist; returns it as stored. */
  subscriptionEnsure(p: {
    name: string;
    streamPrefix: string | null;
    types: string[] | null;
    ordered: boolean;
    from: 'beginning' | 'end';
  }): Promise<Subscription>;
  /** Takes or renews the subscription's lease for `owner`; null while another owner holds it. */
  subscriptionLease(p: { name: string; owner: string; ttlMs: number }): Promise<Subscription | null>;
  subscriptionRelease(p: { name: string; owner: string }): Promise<void>;
  /** Moves the cursor; throws `LeaseLostError` when `owner` no longer holds the lease. */
  subscriptionAdvance(p: { name: string; owner: string; cursor: Cursor }): Promise<void>;
  /** Sets or clears (null) the reason an `ordered` subscription is blocked. */
  subscriptionBlock(p: { name: string; blockedReason: string | null }): Promise<Subscription>;
  subscriptionGet(p: { name: string }): Promise<Subscription>;
  subscriptionList(): Promise<Subscription[]>;
  parkedAdd(p: { subscription: string; event: StoredEvent; error: string; attempts: number }): Promise<void>;
  parkedList(p: { subscription: string; status?: ParkedStatus }): Promise<ParkedEvent[]>;
  parkedSetStatus(p: {
    subscription: string;
    position: number;
    status: ParkedStatus;
    error?: string;
  }): Promise<ParkedEvent>;
  /** Every subscription's lag and parked count, in one query. */
  subscriptionStats(): Promise<SubscriptionStats[]>;
}

export interface Subscription {
  name: string;
  cursor: Cursor;
  streamPrefix: string | null;
  types: string[] | null;
  ordered: boolean;
  blockedReason: string | null;
  owner: string | null;
  leaseExpiresAt: number | null;
  updatedAt: number;
}

export type ParkedStatus = 'parked' | 'retry' | 'skipped' | 'resolved';

export interface ParkedEvent {
  subscription: string;
  position: number;
  event: StoredEvent;
  error: string;
  attempts: number;
  status: ParkedStatus;
  parkedAt: number;
  updatedAt: number;
}
