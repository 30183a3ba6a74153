import { z } from 'zod';
import { iso } from '../../iso.js';
import type { Delivery } from '../../notifications/deliveries.js';
import { NOTIFY_EVENTS } from '../../notifications/events.js';
import type { NotificationInfo } from '../../notifications/registry.js';
import type { Notifications } from '../../notifications/service.js';
import { route } from '../route.js';

/* Outbound webhooks fed by the journal (docs/notifications.md): a notification, its deliveries and their attempts. */

const notificationResponse = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  filter: z.object({ workflow: z.string().optional(), queue: z.string().optional() }),
  body: z.unknown().describe('the JSON template of the payload; null: the event and its run as JSON'),
  warn_at: z.number(),
  enabled: z.boolean(),
  created_at: z.string(),
});

const createRequest = z.object({
  name: z.string().describe("1–100 letters, digits, spaces, '.', '_' or '-'"),
  url: z.string().describe('where deliveries are POSTed: http(s), no credentials; the SSRF rules of http_request'),
  events: z.array(z.string()).describe(`any of ${NOTIFY_EVENTS.join(', ')}`),
  filter: z.record(z.string(), z.unknown()).optional().describe('{ workflow?, queue? }: only events of these'),
  body: z.unknown().optional().describe('a JSON template: its strings may read {{event.*}} and {{run.*}}'),
  warn_at: z.number().optional().describe("run.timeout_warning: the share of a run's timeout, (0, 1); default 0.8"),
  enabled: z.boolean().optional(),
});

const attemptResponse = z.object({
  attempt: z.int(),
  at: z.string(),
  status: z.int().nullable().describe("the receiver's HTTP status; null when it did not answer"),
  error: z.string().nullable(),
  duration_ms: z.int(),
});

const deliveryResponse = z.object({
  id: z.string().describe('sent as runledger-delivery, the same on every attempt'),
  notification_id: z.string(),
  event: z.string(),
  position: z.int().nullable().describe('the journal event it comes from'),
  run_id: z.string().nullable(),
  task_id: z.string().nullable(),
  status: z.enum(['scheduled', 'pending', 'delivered', 'dead', 'skipped']),
  reason: z.string().nullable(),
  body: z.string().nullable(),
  attempts: z.array(attemptResponse),
  created_at: z.string(),
  deliver_at: z.string(),
  updated_at: z.string(),
  cursor: z.string().describe('pass as `before` for the deliveries older than this one'),
});

const record = (n: NotificationInfo) => ({
  id: n.id,
  name: n.name,
  url: n.url,
  events: n.events,
  filter: n.filter,
  body: n.body,
  warn_at: n.warnAt,
  enabled: n.enabled,
  created_at: iso(n.createdAt),
});

const deliveryRecord = (d: Delivery) => ({
  id: d.id,
  notification_id: d.notificationId,
  event: d.event,
  position: d.position,
  run_id: d.runId,
  task_id: d.taskId,
  status: d.status,
  reason: d.reason,
  body: d.body,
  attempts: d.attempts.map((a) => ({
    attempt: a.attempt,
    at: iso(a.at),
    status: a.status,
    error: a.error,
    duration_ms: a.durationMs,
  })),
  created_at: iso(d.createdAt),
  deliver_at: iso(d.deliverAt),
  updated_at: iso(d.updatedAt),
  cursor: d.key,
});

export function notificationRoutes(notifications: Notifications) {
  const { registry, deliveries } = notifications;
  return [
    route({
      method: 'post',
      path: '/notifications',
      tag: 'notifications',
      summary: 'Create a notification; its signing `secret` is in this answer only, never shown again',
      body: createRequest,
      status: 201,
      response: notificationResponse.extend({ secret: z.string() }),
      errors: [400, 413],
      handle: async ({ body }) => {
        const { info, secret } = await registry.create(body as Parameters<typeof registry.create>[0]);
        return { ...record(info), secret };
      },
    }),
    route({
      method: 'get',
      path: '/notifications',
      tag: 'notifications',
      summary: 'The notifications, oldest first (never their secrets)',
      status: 200,
      response: z.object({ notifications: z.array(notificationResponse) }),
      handle: async () => ({ notifications: (await registry.list()).map(record) }),
    }),
    route({
      method: 'get',
      path: '/notifications/{id}',
      tag: 'notifications',
      summary: 'One notification',
      status: 200,
      response: notificationResponse,
      errors: [404],
      handle: async ({ params }) => record(await registry.info(params.id!)),
    }),
    route({
      method: 'delete',
      path: '/notifications/{id}',
      tag: 'notifications',
      summary: 'Delete a notification: its deliveries not yet sent are skipped',
      status: 204,
      errors: [404],
      handle: ({ params }) => registry.delete(params.id!),
    }),
    route({
      method: 'get',
      path: '/notifications/{id}/deliveries',
      tag: 'notifications',
      summary: "A notification's deliveries, newest first, each with its attempts (time, status, error)",
      query: z.object({
        limit: z.coerce.number().int().min(1).max(200).optional(),
        before: z.string().max(300).optional().describe('the `cursor` of the last delivery of the previous page'),
      }),
      status: 200,
      response: z.object({ deliveries: z.array(deliveryResponse), next: z.string().nullable() }),
      errors: [400, 404],
      handle: async ({ params, query }) => {
        await registry.info(params.id!);
        const page = await deliveries.list(params.id!, {
          ...(query.limit ? { limit: query.limit } : {}),
          ...(query.before ? { before: query.before } : {}),
        });
        return { deliveries: page.deliveries.map(deliveryRecord), next: page.next };
      },
    }),
    route({
      method: 'post',
      path: '/notifications/{id}/test',
      tag: 'notifications',
      summary: 'Send a `notification.test` event now, once (no retries): the delivery and its attempt',
      status: 200,
      response: deliveryResponse,
      errors: [404],
      handle: async ({ params }) => deliveryRecord(await notifications.test(params.id!)),
    }),
  ];
}
