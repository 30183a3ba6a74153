import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { NotFoundError } from '../../errors.js';
import type { Secrets } from '../../workflows/secrets.js';
import { eventRecord } from '../records/events.js';
import { secretRecord } from '../records/secrets.js';
import { deadTaskRecord, TASK_STATES, taskListRecord, taskListSchema } from '../records/tasks.js';
import { route } from '../route.js';
import { deadTask, lastKey, secretInfo, secretRequest } from '../schemas.js';

/** Secrets (names only out, values only in), the store's status, tasks and the dead-letter queue. */
export function operationRoutes(engine: Engine, secrets: Secrets) {
  return [
    route({
      method: 'get',
      path: '/status',
      tag: 'operations',
      summary: "The store's health: dialect, location, schema version, event and task counts",
      status: 200,
      response: z.object({
        dialect: z.enum(['sqlite', 'postgres']),
        location: z.string(),
        schemaVersion: z.int(),
        events: z.int(),
        streams: z.int(),
        tasks: z.record(z.string(), z.int()),
        subscriptions: z.int(),
      }),
      handle: () => engine.operator.status(),
    }),
    route({
      method: 'get',
      path: '/tasks',
      tag: 'tasks',
      summary: 'Tasks of every queue (or one), in id order; `state` keeps one state',
      query: z
        .object({
          queue: z.string().max(200).optional(),
          state: z.enum(TASK_STATES).optional(),
          limit: z.coerce.number().int().min(1).max(500).default(100),
          last_key: lastKey('task'),
        })
        .strict(),
      status: 200,
      response: z.object({
        tasks: z.array(taskListSchema),
        count: z.int(),
        last_key: z.string().nullable(),
      }),
      errors: [400],
      handle: async ({ query }) => {
        const page = await engine.queue.list({
          limit: query.limit + 1,
          ...(query.queue ? { queue: query.queue } : {}),
          ...(query.state ? { state: query.state } : {}),
          ...(query.last_key ? { afterId: query.last_key } : {}),
        });
        const tasks = page.slice(0, query.limit).map(taskListRecord);
        return { tasks, count: tasks.length, last_key: page.length > query.limit ? (tasks.at(-1)?.id ?? null) : null };
      },
    }),
    route({
      method: 'get',
      path: '/tasks/{id}/events',
      tag: 'tasks',
      summary: "A task's events, oldest first: its attempts, errors and outcome",
      status: 200,
      response: z.object({
        events: z.array(
          z.object({ position: z.int(), version: z.int(), type: z.string(), timestamp: z.string(), data: z.unknown() }),
        ),
      }),
      errors: [404],
      handle: async ({ params }) => {
        const events = await engine.queue.history(params.id!);
        if (events.length === 0) throw new NotFoundError(`task ${params.id} not found`);
        return { events: events.map(eventRecord) };
      },
    }),
    route({
      method: 'post',
      path: '/secrets',
      tag: 'secrets',
      summary: 'Store or replace a secret (encrypted at rest; never shown again)',
      body: secretRequest,
      status: 201,
      response: secretInfo,
      errors: [400],
      handle: async ({ body }) => {
        return secretRecord(await secrets.set(body.name, body.value));
      },
    }),
    route({
      method: 'get',
      path: '/secrets',
      tag: 'secrets',
      summary: 'Secret names',
      status: 200,
      response: z.object({ secrets: z.array(secretInfo) }),
      handle: async () => ({
        secrets: (await secrets.list()).map(secretRecord),
      }),
    }),
    route({
      method: 'delete',
      path: '/secrets/{name}',
      tag: 'secrets',
      summary: 'Delete a secret',
      status: 204,
      errors: [404],
      handle: ({ params }) => secrets.delete(params.name!),
    }),
    route({
      method: 'get',
      path: '/dlq',
      tag: 'dlq',
      summary: 'Dead tasks with their last error and attempts',
      query: z
        .object({
          queue: z.string().optional(),
          limit: z.coerce.number().int().min(1).max(500).default(100),
          last_key: lastKey('task'),
        })
        .strict(),
      status: 200,
      response: z.object({ tasks: z.array(deadTask), count: z.int(), last_key: z.string().nullable() }),
      handle: async ({ query }) => {
        const page = await engine.queue.dead({
          limit: query.limit + 1,
          ...(query.queue ? { queue: query.queue } : {}),
          ...(query.last_key ? { afterId: query.last_key } : {}),
        });
        const tasks = page.slice(0, query.limit).map(deadTaskRecord);
        return { tasks, count: tasks.length, last_key: page.length > query.limit ? (tasks.at(-1)?.id ?? null) : null };
      },
    }),
    route({
      method: 'post',
      path: '/dlq/{id}/redrive',
      tag: 'dlq',
      summary: 'Put a dead task back with fresh attempts (idempotent)',
      status: 200,
      response: z.object({ id: z.string(), state: z.string(), redriven: z.boolean() }),
      errors: [404],
      handle: async ({ params }) => {
        const { task, redriven } = await engine.queue.redrive(params.id!);
        return { id: task.id, state: task.state, redriven };
      },
    }),
  ];
}
