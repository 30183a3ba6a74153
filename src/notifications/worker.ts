import type { Engine } from '../engine.js';
import { RetryAfterError, TerminalError } from '../errors.js';
import type { TaskHandler } from '../queue/handler.js';
import { isTerminal } from '../runtime/read/view.js';
import type { Deliveries, Delivery } from './deliveries.js';
import { runRecord } from './intake.js';
import type { NotificationRegistry } from './registry.js';
import { sendDelivery } from './send.js';
import { renderBody } from './template.js';

/**
 * The handler of delivery tasks (`{ key }` of a delivery row): it POSTs the delivery and journals the attempt. A
 * failed attempt throws, so the queue retries it with backoff (a 429's `Retry-After` honoured) and sends it to the
 * dead letters after its attempts; a refusal (another 4xx, a refused address) is terminal. A timeout warning first
 * looks at its run: one that has ended is skipped, unless an earlier attempt already sent the warning.
 */
export function deliveryHandler(
  engine: Engine,
  registry: NotificationRegistry,
  deliveries: Deliveries,
  allow: string[],
): TaskHandler {
  return async (payload: { key: string }, { task, attempt, signal }) => {
    const delivery = await deliveries.get(payload.key);
    if (delivery.status === 'delivered' || delivery.status === 'skipped') return { status: delivery.status };
    const n = await registry.get(delivery.notificationId);
    if (!n) {
      await deliveries.skip(delivery.key, 'the notification was deleted');
      return { status: 'skipped' };
    }
    const body = delivery.body ?? (await warningBody(engine, delivery, n.body));
    if (body === null) {
      await deliveries.skip(delivery.key, 'the run ended before its timeout warning was due');
      return { status: 'skipped' };
    }
    const result = await sendDelivery(
      { url: n.url, secret: n.secret, body, deliveryId: delivery.id, event: delivery.event },
      { allow, signal },
    );
    const last = !result.retryable || attempt >= task.maxAttempts;
    const status = result.error === null ? 'delivered' : last ? 'dead' : 'pending';
    const entry = {
      attempt,
      status: result.status,
      error: result.error?.message ?? null,
      durationMs: result.durationMs,
    };
    await deliveries.attempted(delivery.key, entry, status, body);
    if (result.error === null) return { status: result.status };
    if (result.error instanceof RetryAfterError || result.error instanceof TerminalError) throw result.error;
    throw new Error(result.error.message);
  };
}

/** A warning's body, rendered when it is due; null when its run has ended (and no attempt sent it yet). */
async function warningBody(engine: Engine, delivery: Delivery, template: unknown): Promise<string | null> {
  const view = delivery.runId === null ? null : await engine.run(delivery.runId).catch(() => null);
  if (view === null || (isTerminal(view.status) && delivery.attempts.length === 0)) return null;
  const event = {
    type: delivery.event,
    at: new Date(delivery.createdAt).toISOString(),
    position: delivery.position,
    delivery_id: delivery.id,
    due_at: new Date(delivery.deliverAt).toISOString(),
  };
  return JSON.stringify(renderBody(template, { event, run: runRecord(view) }));
}
