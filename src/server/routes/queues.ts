import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { toMs } from '../../duration.js';
import type { Engine } from '../../engine.js';
import { ValidationError } from '../../errors.js';
import type { EnqueueOptions, EnqueueResult } from '../../queue/queue.js';
import { errorResponse } from '../errors.js';
import { route } from '../route.js';
import { claimedTask, claimedTaskSchema, taskRecord, taskRecordSchema } from '../records/tasks.js';

/*
 * The task protocol (docs/protocol.md): tasks in, and remote workers that claim, heartbeat,
 * complete and fail them over HTTP. A thin face over `TaskQueue` and `RemoteWorkers`. Unknown
 * fields are ignored, not refused: a newer client's additions must not break an older server of
 * the same major.
 */

/** The major version of the protocol these routes speak; `runledger-protocol` names it on every answer. */
export const PROTOCOL_MAJOR = 1;
export const PROTOCOL_HEADER = 'runledger-protocol';

/** A duration: integer ms or a string like '30s' (src/duration.ts), from `min` to `max` ms. */
const duration = (min: number, max: number, range: string) =>
  z
    .union([z.int(), z.string()])
    .describe(`a duration: integer milliseconds or a string like "500ms", "30s", "2m"; ${range}`)
    .transform((value, ctx) => {
      let ms: number;
      try {
        ms = toMs(value);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as ValidationError).problems[0]!.message });
        return z.NEVER;
      }
      if (ms < min || ms > max) ctx.addIssue({ code: 'custom', message: `must be ${range} (got ${ms} ms)` });
      return ms;
    });

const DAY = 86_400_000;
const LIMIT_MAX = 1_000_000;
const newTask = z.object({
  payload: z.unknown(),
  idempotency_key: z.string().optional(),
  ordering_key: z.string().optional(),
  priority: z
    .int()
    .min(-1_000_000)
    .max(1_000_000)
    .optional()
    .describe('higher runs first; a waiting task ages: one point per 10 s waited, so none starves'),
  concurrency: z
    .object({
      key: z.string().min(1).max(256),
      limit: z.int().min(1).max(LIMIT_MAX),
      on_limit: z
        .enum(['queue', 'cancel_in_progress', 'drop_newest'])
        .optional()
        .describe(
          "when the key is full (as many waiting or running as the limit): queue (default) waits; drop_newest answers 409 naming the limit; cancel_in_progress cancels the key's oldest task in flight, waiting or running (its handler's signal aborts): the newest wins",
        ),
    })
    .optional()
    .describe('at most `limit` tasks of `key` in this queue run at once, across every worker; the rest wait in order'),
  fair_by: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("the task's fairness group (a tenant): waiting tasks of different groups take turns, one each"),
  rate_limit: z
    .object({
      name: z.string().min(1).max(100),
      units: z.number().positive().optional(),
      key: z.string().min(1).max(200).optional(),
    })
    .optional()
    .describe(
      'a named rate limit each attempt takes before its handler runs (units default 1; key: a constant bucket); no room, the task waits for the next slot without using an attempt',
    ),
  delay: duration(0, 365 * DAY, 'from 0 to 365 days').optional(),
  run_at: z.iso.datetime({ offset: true }).optional(),
  max_attempts: z.int().min(1).max(1000).optional(),
});
type NewTaskBody = z.infer<typeof newTask>;

/** One task, or a batch as `tasks`; each checked for what zod cannot say alone (payload present, delay or run_at). */
const enqueueBody = newTask
  .partial({ payload: true })
  .extend({ tasks: z.array(newTask).min(1).max(1000).optional().describe('a batch (then no other field)') })
  .superRefine((body, ctx) => {
    const check = (item: Partial<NewTaskBody>, path: Array<string | number>) => {
      if (!('payload' in item))
        ctx.addIssue({ code: 'custom', path: [...path, 'payload'], message: 'required (null is a payload)' });
      if (item.delay !== undefined && item.run_at !== undefined)
        ctx.addIssue({ code: 'custom', path: [...path, 'run_at'], message: 'give delay or run_at, not both' });
    };
    if (body.tasks === undefined) {
      check(body, []);
      return;
    }
    const extra = Object.keys(body).filter((k) => k !== 'tasks' && k in newTask.shape);
    if (extra.length > 0)
      ctx.addIssue({ code: 'custom', path: [extra[0]!], message: 'a batch (tasks) takes its fields per task' });
    for (const [i, item] of body.tasks.entries()) check(item, ['tasks', i]);
  });

const claimBody = z.object({
  worker: z
    .string()
    .min(1)
    .max(200)
    .describe("the worker's name, 1-200 characters: shown as `remote:<worker>` in the task's events"),
  max: z.int().min(1).max(1000).default(1),
  wait: duration(0, 60_000, 'from 0 to 60s').default(0),
  lease: duration(1000, 3_600_000, 'from 1s to 1h').optional(),
});
const token = z.string().min(1).max(200);
const heartbeatBody = z.object({ lease_token: token, lease: duration(1000, 3_600_000, 'from 1s to 1h').optional() });
const completeBody = z.object({ lease_token: token, result: z.unknown().optional() });
const completeManyBody = z.object({
  completions: z
    .array(z.object({ id: z.string().min(1).max(200), lease_token: token, result: z.unknown().optional() }))
    .min(1)
    .max(1000),
});
const failBody = z.object({
  lease_token: token,
  error: z.string().max(10_000),
  retryable: z.boolean().default(true),
  retry_after: duration(0, 365 * DAY, 'from 0 to 365 days').optional(),
});

const enqueued = z.object({ task: taskRecordSchema, created: z.boolean() });
const queueLimit = z.object({
  queue: z.string(),
  concurrency: z.int().nullable().describe('most tasks of the queue running at once, across every worker; null: none'),
});
const limitBody = z.object({
  concurrency: z.int().min(1).max(LIMIT_MAX).nullable().describe(`1 to ${LIMIT_MAX}, or null to remove the limit`),
});

const options = (item: Partial<NewTaskBody>): EnqueueOptions & { payload: unknown } => ({
  payload: item.payload ?? null,
  ...(item.idempotency_key === undefined ? {} : { idempotencyKey: item.idempotency_key }),
  ...(item.ordering_key === undefined ? {} : { orderingKey: item.ordering_key }),
  ...(item.priority === undefined ? {} : { priority: item.priority }),
  ...(item.concurrency === undefined
    ? {}
    : {
        concurrency: {
          key: item.concurrency.key,
          limit: item.concurrency.limit,
          ...(item.concurrency.on_limit === undefined ? {} : { onLimit: item.concurrency.on_limit }),
        },
      }),
  ...(item.fair_by === undefined ? {} : { fairBy: item.fair_by }),
  ...(item.rate_limit === undefined ? {} : { rateLimit: item.rate_limit }),
  ...(item.max_attempts === undefined ? {} : { maxAttempts: item.max_attempts }),
  ...(item.delay === undefined ? {} : { runAt: Date.now() + item.delay }),
  ...(item.run_at === undefined ? {} : { runAt: Date.parse(item.run_at) }),
});

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const answer = (r: EnqueueResult) => ({ task: taskRecord(r.task), created: r.created });

/**
 * The task protocol's routes. `app` gets the protocol's check and header on their paths, so an
 * error answer (a bad body, 401, 405) says the protocol's version too.
 */
export function queueRoutes(engine: Engine, app: Hono) {
  const remote = engine.queue.remote({
    leaseMs: engine.config.leaseMs,
    pollMs: engine.config.pollMs,
    maxResultBytes: engine.config.maxPayloadBytes,
    events: engine.events,
  });
  const routes = [
    route({
      method: 'post',
      path: '/queues/{queue}/tasks',
      tag: 'tasks',
      summary:
        'Enqueue a task (201; a repeated idempotency key: 200, the first task, nothing written) or a batch `tasks` of up to 1000 (201, in order, all or nothing)',
      body: enqueueBody,
      status: 201,
      response: z.union([enqueued, z.object({ tasks: z.array(enqueued) })]),
      errors: [400, 413],
      handle: async ({ params, body }) => {
        if (body.tasks)
          return json(201, {
            tasks: (await engine.queue.enqueueMany(params.queue!, body.tasks.map(options), { path: 'tasks' })).map(
              answer,
            ),
          });
        const { payload, ...rest } = options(body);
        const result = await engine.queue.enqueue(params.queue!, payload, rest);
        return json(result.created ? 201 : 200, answer(result));
      },
    }),
    route({
      method: 'put',
      path: '/queues/{queue}/limit',
      tag: 'tasks',
      summary:
        "Set the queue's limit of running tasks across every worker (null removes it); the next claim obeys it, no restart",
      body: limitBody,
      status: 200,
      response: queueLimit,
      errors: [400],
      handle: async ({ params, body }) => {
        await engine.queue.setLimit(params.queue!, body.concurrency);
        return { queue: params.queue!, concurrency: await engine.queue.limit(params.queue!) };
      },
    }),
    route({
      method: 'get',
      path: '/queues/{queue}/limit',
      tag: 'tasks',
      summary: "The queue's limit of running tasks across every worker (null: none)",
      status: 200,
      response: queueLimit,
      errors: [400],
      handle: async ({ params }) => ({ queue: params.queue!, concurrency: await engine.queue.limit(params.queue!) }),
    }),
    route({
      method: 'post',
      path: '/queues/{queue}/claim',
      tag: 'tasks',
      summary:
        'Claim up to `max` ready tasks, each with a lease token; waits up to `wait` for one (woken as a task is enqueued), answering `tasks: []` when none came',
      body: claimBody,
      status: 200,
      response: z.object({ tasks: z.array(claimedTaskSchema) }),
      errors: [400],
      handle: async ({ params, body, signal }) => {
        const tasks = await remote.claim({
          queue: params.queue!,
          worker: body.worker,
          max: body.max,
          waitMs: body.wait,
          ...(body.lease === undefined ? {} : { leaseMs: body.lease }),
          signal,
        });
        return { tasks: tasks.map(claimedTask) };
      },
    }),
    route({
      method: 'post',
      path: '/tasks/{id}/heartbeat',
      tag: 'tasks',
      summary:
        "Extend a claimed task's lease (by `lease`, default the server's); 409 lease_lost when the token no longer holds it",
      body: heartbeatBody,
      status: 200,
      response: z.object({ lease_expires_at: z.string() }),
      errors: [400, 404, 409],
      handle: async ({ params, body }) => {
        const task = await remote.heartbeat({ id: params.id!, leaseToken: body.lease_token }, body.lease);
        return { lease_expires_at: new Date(task.leaseExpiresAt!).toISOString() };
      },
    }),
    route({
      method: 'post',
      path: '/tasks/{id}/complete',
      tag: 'tasks',
      summary:
        'Complete a claimed task with its `result`; 409 lease_lost (nothing written) when the token no longer holds its lease',
      body: completeBody,
      status: 200,
      response: z.object({ task: taskRecordSchema }),
      errors: [400, 404, 409, 413],
      handle: async ({ params, body }) => ({
        task: taskRecord(await remote.complete({ id: params.id!, leaseToken: body.lease_token }, body.result)),
      }),
    }),
    route({
      method: 'post',
      path: '/tasks/complete',
      tag: 'tasks',
      summary:
        'Complete up to 1000 claimed tasks in one request (added in protocol 1): each fenced on its own, answered in order with its task or its error (lease_lost, not_found), the others complete',
      body: completeManyBody,
      status: 200,
      response: z.object({
        results: z.array(
          z.union([
            z.object({ id: z.string(), task: taskRecordSchema }),
            z.object({ id: z.string(), error: z.object({ code: z.string(), message: z.string() }) }),
          ]),
        ),
      }),
      errors: [400, 413],
      handle: async ({ body }) => {
        const outcomes = await remote.completeMany(
          body.completions.map((c) => ({ id: c.id, leaseToken: c.lease_token, result: c.result })),
        );
        return {
          results: outcomes.map((o, i) =>
            'task' in o
              ? { id: body.completions[i]!.id, task: taskRecord(o.task) }
              : { id: body.completions[i]!.id, error: { code: o.error.code, message: o.error.message } },
          ),
        };
      },
    }),
    route({
      method: 'post',
      path: '/tasks/{id}/fail',
      tag: 'tasks',
      summary:
        'Fail the attempt: ready again after backoff (or `retry_after`), or dead when not `retryable` or out of attempts; 409 lease_lost (nothing written) when the token no longer holds its lease',
      body: failBody,
      status: 200,
      response: z.object({ task: taskRecordSchema }),
      errors: [400, 404, 409],
      handle: async ({ params, body }) => {
        const failure = {
          error: body.error,
          retryable: body.retryable,
          ...(body.retry_after === undefined ? {} : { retryAfterMs: body.retry_after }),
        };
        return { task: taskRecord(await remote.fail({ id: params.id!, leaseToken: body.lease_token }, failure)) };
      },
    }),
  ];
  for (const r of routes) app.use(r.path.replace(/\{(\w+)\}/g, ':$1'), protocol);
  return routes;
}

/** Refuses a request for a major this server does not speak (naming the header), and says which one it speaks on every answer. */
async function protocol(c: Context, next: () => Promise<void>): Promise<Response | undefined> {
  const asked = c.req.header(PROTOCOL_HEADER);
  if (asked !== undefined && asked.trim() !== String(PROTOCOL_MAJOR)) {
    // answered here: an error thrown by a middleware gets a fresh response, without this header
    const { status, body } = errorResponse(
      new ValidationError(
        PROTOCOL_HEADER,
        `major ${JSON.stringify(asked.slice(0, 20))} is not spoken here: this server speaks ${PROTOCOL_MAJOR}`,
      ),
    );
    return c.json(body, status as 400, { [PROTOCOL_HEADER]: String(PROTOCOL_MAJOR) });
  }
  // a handler's error is already an answer here (the app's onError ran at its level)
  await next();
  c.res.headers.set(PROTOCOL_HEADER, String(PROTOCOL_MAJOR));
  return undefined;
}
