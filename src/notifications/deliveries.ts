import { createHash } from 'node:crypto';
import { NotFoundError } from '../errors.js';
import type { Journal } from '../journal/journal.js';
import type { Store } from '../storage/store.js';
import type { NotifyEvent } from './events.js';

const PROJECTION = 'notification-delivery';
const MAX_ERROR = 500;

/** One try of a delivery: when, what the receiver answered (null: no answer), the error, how long it took. */
export interface DeliveryAttempt {
  attempt: number;
  at: number;
  status: number | null;
  error: string | null;
  durationMs: number;
}

/**
 * `scheduled`: a timeout warning waiting for its time; `pending`: to be sent, or being retried; `delivered`: a 2xx
 * came back; `dead`: its attempts are used up or the receiver refused it for good (the task is in the dead letters);
 * `skipped`: nothing was sent (the run ended before its warning, the notification was deleted).
 */
export type DeliveryStatus = 'scheduled' | 'pending' | 'delivered' | 'dead' | 'skipped';

/** One event sent to one notification's URL, with its attempts. Times are ms (database clock). */
export interface Delivery {
  /** Sent as `runledger-delivery`: the same on every attempt. */
  id: string;
  notificationId: string;
  /** Where the row is kept: `<notification id>:<created at>:<delivery id>`. */
  key: string;
  event: NotifyEvent | 'notification.test';
  /** The journal event it comes from (null for a test). */
  position: number | null;
  runId: string | null;
  taskId: string | null;
  status: DeliveryStatus;
  /** The JSON sent (null until a timeout warning is first sent). */
  body: string | null;
  attempts: DeliveryAttempt[];
  /** Why it was skipped. */
  reason: string | null;
  createdAt: number;
  deliverAt: number;
  updatedAt: number;
}

/** The id of the delivery of journal event `position` to notification `notificationId`: a redelivery derives it again. */
export function deliveryId(notificationId: string, position: number | string): string {
  return `dlv_${createHash('sha256').update(`${notificationId}:${position}`).digest('hex').slice(0, 26)}`;
}

/** The row key of a delivery: listed by notification, newest last in key order. */
export function deliveryKey(notificationId: string, createdAt: number, id: string): string {
  return `${notificationId}:${String(createdAt).padStart(15, '0')}:${id}`;
}

/**
 * The deliveries of notifications as a projection (`notification-delivery`); each attempt is also journaled
 * (`notification.attempted` in stream `notification-delivery:<id>`) in the transaction that updates its row.
 *
 * @example const { deliveries } = await notifications.deliveries.list('ntf_01J…');
 */
export class Deliveries {
  constructor(
    private readonly store: Store,
    private readonly journal: Journal,
  ) {}

  /** Writes a new delivery's row in `tx` (the transaction that enqueues its task). */
  add(tx: Store, delivery: Delivery): Promise<void> {
    return tx.projectionPut({ name: PROJECTION, key: delivery.key, value: delivery });
  }

  async get(key: string): Promise<Delivery> {
    const value = await this.store.projectionGet({ name: PROJECTION, key });
    if (value === undefined) throw new NotFoundError(`delivery ${key} not found`);
    return value as Delivery;
  }

  /** Journals an attempt and moves the delivery to `status`; `body` is kept when the row has none yet. */
  async attempted(
    key: string,
    attempt: Omit<DeliveryAttempt, 'at'>,
    status: DeliveryStatus,
    body?: string,
  ): Promise<void> {
    await this.store.transaction(async (tx) => {
      const row = (await tx.projectionGet({ name: PROJECTION, key })) as Delivery | undefined;
      if (!row) return;
      const at = await tx.now();
      const entry = { ...attempt, at, error: attempt.error === null ? null : attempt.error.slice(0, MAX_ERROR) };
      const data = { notification_id: row.notificationId, ...entry, outcome: status };
      await this.journal.append(`notification-delivery:${row.id}`, [{ type: 'notification.attempted', data }], { tx });
      const next = {
        ...row,
        status,
        attempts: [...row.attempts, entry],
        body: row.body ?? body ?? null,
        updatedAt: at,
      };
      await tx.projectionPut({ name: PROJECTION, key, value: next });
    });
  }

  /** Marks a delivery skipped (nothing sent), saying why. */
  async skip(key: string, reason: string): Promise<void> {
    await this.store.transaction(async (tx) => {
      const row = (await tx.projectionGet({ name: PROJECTION, key })) as Delivery | undefined;
      if (!row) return;
      const value = { ...row, status: 'skipped', reason, updatedAt: await tx.now() };
      await tx.projectionPut({ name: PROJECTION, key, value });
    });
  }

  /** A notification's deliveries, newest first; `before` is the `key` of the last one of the previous page. */
  async list(
    notificationId: string,
    options: { limit?: number; before?: string } = {},
  ): Promise<{ deliveries: Delivery[]; next: string | null }> {
    const limit = options.limit ?? 50;
    const rows = await this.store.projectionList({
      name: PROJECTION,
      prefix: `${notificationId}:`,
      backwards: true,
      limit: limit + 1,
      ...(options.before ? { before: options.before } : {}),
    });
    const deliveries = rows.slice(0, limit).map((r) => r.value as Delivery);
    return { deliveries, next: rows.length > limit ? deliveries[deliveries.length - 1]!.key : null };
  }
}
