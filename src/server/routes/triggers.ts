import { z } from 'zod';
import { eventsBody } from '../../triggers/events.js';
import { ruleRequest } from '../../triggers/rules.js';
import { scheduleRequest } from '../../triggers/schedules.js';
import type { TriggerService } from '../../triggers/service.js';
import { parseTraceparent } from '../../observe/trace.js';
import { route } from '../route.js';
import { lastKey } from '../schemas.js';

const time = z.iso.datetime();
const page = (max: number, fallback: number, key: ReturnType<typeof lastKey>) =>
  z.object({ limit: z.coerce.number().int().min(1).max(max).default(fallback), last_key: key }).strict();

const target = z.union([z.object({ workflow: z.string() }), z.object({ agent: z.string() })]);
const match = z.object({
  rule_id: z.string(),
  rule_name: z.string(),
  run_id: z.string().nullable(),
  kind: z.enum(['execution', 'workflow', 'session']).nullable(),
  error: z.string().optional(),
});
const routing = { received_at: time, routed: z.boolean(), routed_at: time.nullable(), matches: z.array(match) };
const envelope = z.object({
  id: z.string(),
  source: z.string(),
  'detail-type': z.string(),
  detail: z.record(z.string(), z.unknown()),
  time,
  resources: z.array(z.string()).optional(),
});
const eventView = z.object({ id: z.string(), envelope, ...routing });
const rule = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().optional(),
  pattern: z.record(z.string(), z.unknown()),
  target,
  input: z.unknown(),
  enabled: z.boolean(),
  created_at: time,
  updated_at: time,
});
const schedule = z.object({
  id: z.string(),
  name: z.string().nullable(),
  cron: z.string(),
  timezone: z.string(),
  target,
  input: z.unknown(),
  overlap: z.enum(['skip', 'allow']),
  catch_up: z.enum(['skip', 'one']),
  paused: z.boolean(),
  created_at: time,
  updated_at: time,
  next: z.array(time),
  state: z.object({
    last_slot: time.nullable(),
    last_outcome: z.enum(['fired', 'skipped', 'failed']).nullable(),
    last_run_id: z.string().nullable(),
    last_error: z.string().nullable(),
    fired: z.int(),
    skipped: z.int(),
    failed: z.int(),
  }),
});

/** Checked by the service, which reports every problem with its path (the pattern's, the target's too); documented by `schema`. */
const checkedBy = (schema: z.ZodType) =>
  z.unknown().meta(z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>);

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

/**
 * Events, rules and schedules. `GET /events/{id}` matches any id, so a route such as
 * `GET /events/stream` must be mounted before these.
 */
export function triggerRoutes({ events, rules, schedules }: TriggerService) {
  return [
    route({
      method: 'post',
      path: '/events',
      tag: 'events',
      summary:
        'Store an event (or an array of up to 100): 202 when new, 200 when every id was stored before (nothing written, the first returned)',
      body: eventsBody,
      status: 202,
      errors: [400, 413],
      response: z.union([
        eventView.extend({ duplicate: z.boolean() }),
        z.object({ events: z.array(z.object({ id: z.string(), duplicate: z.boolean() })), count: z.int() }),
      ]),
      handle: async ({ body, headers }) => {
        const traceparent = parseTraceparent(headers.get('traceparent'));
        const stored = await events.put(body.envelopes, traceparent ? { traceparent } : {});
        const status = stored.some((s) => s.created) ? 202 : 200;
        if (!body.batch) return json(status, { ...stored[0]!.event, duplicate: !stored[0]!.created });
        return json(status, {
          events: stored.map((s) => ({ id: s.event.id, duplicate: !s.created })),
          count: stored.length,
        });
      },
    }),
    route({
      method: 'get',
      path: '/events',
      tag: 'events',
      summary: 'Stored events, newest first, with their routing',
      query: page(100, 20, lastKey('', /^\d{16}$/)),
      status: 200,
      errors: [400],
      response: z.object({
        events: z.array(z.object({ id: z.string(), source: z.string(), 'detail-type': z.string(), time, ...routing })),
        count: z.int(),
        last_key: z.string().nullable(),
      }),
      handle: ({ query }) => events.list(query),
    }),
    route({
      method: 'get',
      path: '/events/{id}',
      tag: 'events',
      summary: 'One event: its envelope, whether it was routed, the rules it matched and the runs they started',
      status: 200,
      response: eventView,
      errors: [404],
      handle: ({ params }) => events.get(params.id!),
    }),
    route({
      method: 'post',
      path: '/rules',
      tag: 'rules',
      summary:
        'Create a rule: an EventBridge-style pattern, a target and an input mapping (default "$", the whole event)',
      body: checkedBy(ruleRequest),
      status: 201,
      response: rule,
      errors: [400, 409],
      handle: ({ body }) => rules.create(body),
    }),
    route({
      method: 'get',
      path: '/rules',
      tag: 'rules',
      summary: 'Rules, newest first (by creation)',
      query: page(500, 100, lastKey('rule')),
      status: 200,
      response: z.object({ rules: z.array(rule), count: z.int(), last_key: z.string().nullable() }),
      handle: ({ query }) => rules.list(query),
    }),
    route({
      method: 'get',
      path: '/rules/{id}',
      tag: 'rules',
      summary: 'One rule',
      status: 200,
      response: rule,
      errors: [404],
      handle: ({ params }) => rules.get(params.id!),
    }),
    route({
      method: 'post',
      path: '/rules/{id}/enable',
      tag: 'rules',
      summary: 'Route events by this rule again',
      status: 200,
      response: rule,
      errors: [404],
      handle: ({ params }) => rules.setEnabled(params.id!, true),
    }),
    route({
      method: 'post',
      path: '/rules/{id}/disable',
      tag: 'rules',
      summary: 'Stop routing events by this rule',
      status: 200,
      response: rule,
      errors: [404],
      handle: ({ params }) => rules.setEnabled(params.id!, false),
    }),
    route({
      method: 'delete',
      path: '/rules/{id}',
      tag: 'rules',
      summary: 'Delete a rule (runs it started go on)',
      status: 204,
      errors: [404],
      handle: ({ params }) => rules.delete(params.id!),
    }),
    route({
      method: 'post',
      path: '/schedules',
      tag: 'schedules',
      summary: 'Create a cron schedule (5 fields, or 6 with leading seconds) in a time zone',
      body: checkedBy(scheduleRequest),
      status: 201,
      response: schedule,
      errors: [400],
      handle: ({ body }) => schedules.create(body),
    }),
    route({
      method: 'get',
      path: '/schedules',
      tag: 'schedules',
      summary: 'Schedules, newest first (by creation), each with its next three slots',
      query: page(500, 100, lastKey('sch')),
      status: 200,
      response: z.object({ schedules: z.array(schedule), count: z.int(), last_key: z.string().nullable() }),
      handle: ({ query }) => schedules.list(query),
    }),
    route({
      method: 'get',
      path: '/schedules/{id}',
      tag: 'schedules',
      summary: 'One schedule, its next slots and what its last slot came to',
      status: 200,
      response: schedule,
      errors: [404],
      handle: ({ params }) => schedules.get(params.id!),
    }),
    route({
      method: 'put',
      path: '/schedules/{id}',
      tag: 'schedules',
      summary:
        'Replace a schedule’s cron, time zone, target, input, overlap and catch-up (its id, state and pause stay): slots of the new cron after now fire',
      body: checkedBy(scheduleRequest),
      status: 200,
      response: schedule,
      errors: [400, 404],
      handle: ({ params, body }) => schedules.update(params.id!, body),
    }),
    route({
      method: 'post',
      path: '/schedules/{id}/pause',
      tag: 'schedules',
      summary: 'Pause a schedule: it fires nothing until resumed',
      status: 200,
      response: schedule,
      errors: [404],
      handle: ({ params }) => schedules.setPaused(params.id!, true),
    }),
    route({
      method: 'post',
      path: '/schedules/{id}/resume',
      tag: 'schedules',
      summary:
        'Resume a paused schedule: it fires the next slot after now; the slots missed while paused are not fired',
      status: 200,
      response: schedule,
      errors: [404],
      handle: ({ params }) => schedules.setPaused(params.id!, false),
    }),
    route({
      method: 'delete',
      path: '/schedules/{id}',
      tag: 'schedules',
      summary: 'Delete a schedule (runs it started go on)',
      status: 204,
      errors: [404],
      handle: ({ params }) => schedules.delete(params.id!),
    }),
  ];
}
