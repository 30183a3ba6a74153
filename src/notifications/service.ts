import type { Backoff } from '../backoff.js';
import type { Engine } from '../engine.js';
import { NotFoundError } from '../errors.js';
import { newId } from '../ids.js';
import type { Subscriber } from '../journal/subscription.js';
import type { Store } from '../storage/store.js';
import { Deliveries, type Delivery, deliveryKey } from './deliveries.js';
import { NOTIFY_QUEUE } from './events.js';
import { intake } from './intake.js';
import { NotificationRegistry } from './registry.js';
import { sendDelivery } from './send.js';
import { renderBody } from './template.js';
import { deliveryHandler } from './worker.js';

export const NOTIFY_SUBSCRIPTION = 'notifications';

export interface NotificationsOptions {
  /** Hosts and CIDRs a webhook may reach although the SSRF rules refuse them (`RUNLEDGER_HTTP_ALLOW`). */
  allow: string[];
  /** Attempts of a delivery in all before it is dead-lettered; default 10. */
  maxAttempts?: number;
  /** Between attempts; default 1 s doubling to 10 min, ±20 %. */
  backoff?: Backoff;
  /** Deliveries sent at once by this process; default 8. */
  concurrency?: number;
  onError?: (error: unknown) => void;
}

/** The notifications front: the registry, the deliveries, a test send, and the subscription and worker that deliver. */
export interface Notifications {
  registry: NotificationRegistry;
  deliveries: Deliveries;
  /** Sends one `notification.test` event now (no retries), recorded as a delivery with its attempt. */
  test(id: string): Promise<Delivery>;
  /** Starts the journal subscription and the delivery worker in this process; resolves with the subscription. */
  start(): Promise<Subscriber>;
}

/**
 * Outbound webhooks fed by a durable subscription of the journal (docs/notifications.md): a run failed or
 * succeeded, an approval waiting, a dead task, a run near its timeout. A crash never loses a delivery (the cursor
 * and the delivery's task commit together) and never sends one event under two delivery ids.
 *
 * @example
 * const n = notifications(engine, store, { allow: [] });
 * await n.start();
 * const { secret } = await n.registry.create({ name: 'ops', url: 'https://hooks.example.com/x', events: ['run.failed'] });
 */
export function notifications(engine: Engine, store: Store, options: NotificationsOptions): Notifications {
  const registry = new NotificationRegistry(store, engine.journal, options.allow);
  const deliveries = new Deliveries(store, engine.journal);
  const maxAttempts = options.maxAttempts ?? 10;
  return {
    registry,
    deliveries,
    async test(id) {
      const n = await registry.get(id);
      if (!n) throw new NotFoundError(`notification ${id} not found`);
      const now = await engine.operator.now();
      const dlv = newId('dlv');
      const event = { type: 'notification.test', at: new Date(now).toISOString(), position: null, delivery_id: dlv };
      const body = JSON.stringify(renderBody(n.body, { event, run: null }));
      const key = deliveryKey(n.id, now, dlv);
      await store.transaction((tx) =>
        deliveries.add(tx, {
          id: dlv,
          notificationId: n.id,
          key,
          event: 'notification.test',
          position: null,
          runId: null,
          taskId: null,
          status: 'pending',
          body,
          attempts: [],
          reason: null,
          createdAt: now,
          deliverAt: now,
          updatedAt: now,
        }),
      );
      const result = await sendDelivery(
        { url: n.url, secret: n.secret, body, deliveryId: dlv, event: 'notification.test' },
        { allow: options.allow, signal: AbortSignal.timeout(15_000) },
      );
      const entry = {
        attempt: 1,
        status: result.status,
        error: result.error?.message ?? null,
        durationMs: result.durationMs,
      };
      await deliveries.attempted(key, entry, result.error === null ? 'delivered' : 'dead');
      return deliveries.get(key);
    },
    async start() {
      engine.work(NOTIFY_QUEUE, deliveryHandler(engine, registry, deliveries, options.allow), {
        concurrency: options.concurrency ?? 8,
        backoff: options.backoff ?? { baseMs: 1000, factor: 2, maxMs: 600_000, jitter: 0.2 },
      });
      const { subscribe, handler } = intake(engine, registry, deliveries, { maxAttempts });
      return engine.subscribe(
        NOTIFY_SUBSCRIPTION,
        { ...subscribe, from: 'end', ordered: false, ...(options.onError ? { onError: options.onError } : {}) },
        handler,
      );
    },
  };
}
