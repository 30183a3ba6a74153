import { z } from 'zod';
import { SESSION_EVENT_TYPES } from '../../agents/lifecycle.js';
import type { SessionService } from '../../agents/service.js';
import { checkRunFlow } from '../../workflows/flow.js';
import { route, type Route } from '../route.js';
import { runFlowFields } from '../schemas.js';

const time = z.iso.datetime().describe('ISO 8601 UTC');
const eventType = z.enum(SESSION_EVENT_TYPES);

const session = z.object({
  session_id: z.string(),
  agent: z.string(),
  status: z.enum(['pending', 'running', 'success', 'failed']).describe('the run vocabulary (docs/glossary.md)'),
  input: z.unknown(),
  created_at: time,
  updated_at: time,
  error_message: z.string().nullable(),
  events_count: z.int(),
  last_event: eventType,
});

const startBody = z
  .object({
    agent: z.string().min(1).max(100),
    input: z.unknown().optional(),
    session_id: z.string().min(1).max(200).optional(),
    priority: runFlowFields.priority,
    budget: runFlowFields.budget,
  })
  .strict()
  .describe("`priority` and `budget` replace the agent's own (its `flow`) for this session's run, as on `POST /runs`");

const reportBody = z
  .object({
    status: z
      .enum(['success', 'failed', 'COMPLETED', 'FAILED'])
      .describe('success or failed (COMPLETED and FAILED, the spellings before 0.2, are still accepted)'),
    error_message: z.string().max(2000).nullable().optional(),
  })
  .strict();

const event = z.object({ type: eventType, timestamp: time, error_message: z.string().optional() });

/** Agent sessions: start one, read it and its lifecycle events, and the report an HTTP agent sends when its work ends. */
export function sessionRoutes(service: SessionService): Route[] {
  return [
    route({
      method: 'post',
      path: '/sessions',
      tag: 'sessions',
      summary: 'Start a session of an agent; a repeated session_id or `Idempotency-Key` returns the first one',
      body: startBody,
      status: 202,
      response: session,
      errors: [400, 409, 413],
      handle: ({ body, headers }) => {
        const { priority, budget, ...start } = body;
        // checked and mapped as POST /runs does: each field given replaces the agent's
        const flow = checkRunFlow({ priority, budget });
        const key = headers.get('idempotency-key');
        return service.create({ ...start, flow, ...(key !== null ? { idempotencyKey: key } : {}) });
      },
    }),
    route({
      method: 'get',
      path: '/sessions/{id}',
      tag: 'sessions',
      summary: 'One session: its status, and the error that failed it',
      status: 200,
      response: session,
      errors: [404],
      handle: ({ params }) => service.get(params.id!),
    }),
    route({
      method: 'get',
      path: '/sessions/{id}/events',
      tag: 'sessions',
      summary:
        "A session's lifecycle events, oldest first (`order=desc`: newest first, the brief's polling query); `status` keeps one event type, `limit` the first N in that order",
      query: z
        .object({
          status: eventType.optional(),
          order: z.enum(['asc', 'desc']).default('asc'),
          limit: z.coerce.number().int().min(1).max(500).optional(),
        })
        .strict(),
      status: 200,
      response: z.object({ session_id: z.string(), events: z.array(event), count: z.int() }),
      errors: [400, 404],
      handle: async ({ params, query }) => {
        const { status, order, limit } = query;
        const events = await service.events(params.id!, {
          order,
          ...(status !== undefined ? { status } : {}),
          ...(limit !== undefined ? { limit } : {}),
        });
        return { session_id: params.id!, events, count: events.length };
      },
    }),
    route({
      method: 'post',
      path: '/sessions/{id}/report',
      tag: 'sessions',
      summary:
        "An HTTP agent's report that its work ended; a repeat is harmless, another report after the first is 409",
      body: reportBody,
      status: 202,
      response: z.object({ session_id: z.string(), status: z.enum(['success', 'failed']), duplicate: z.boolean() }),
      errors: [400, 404, 409],
      handle: ({ params, body }) => service.report(params.id!, body),
    }),
  ];
}
