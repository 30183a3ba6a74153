import { z } from 'zod';
import type { Engine } from '../../engine.js';
import type { Definitions } from '../../workflows/definitions.js';
import { NotFoundError } from '../../errors.js';
import { readRunView } from '../../runtime/view.js';
import { route, type Route } from '../route.js';
import { runRecord, runResponse } from './runs.js';

const signalBody = z
  .object({
    name: z.string().min(1).max(200),
    payload: z.unknown().optional(),
    idempotency_key: z.string().min(1).max(200).optional(),
  })
  .strict();

/**
 * One run of any kind by id, and the two things anyone may do to it: cancel it, and send it a
 * signal (consumed by a `waitForEvent(name)` of the run); a stored workflow's version history and a
 * task's history.
 *
 * @example mount(new Hono(), runControlRoutes(engine, workflows.definitions));
 */
export function runControlRoutes(engine: Engine, definitions: Definitions): Route[] {
  const store = engine.store;
  return [
    route({
      method: 'get', path: '/workflows/{id}/versions', tag: 'workflows', summary: "A stored workflow's saved versions, oldest first, each with its definition",
      status: 200, errors: [404],
      handle: async ({ params }) => ({ versions: await definitions.versions(params.id!) }),
    }),
    route({
      method: 'get', path: '/tasks/{id}/history', tag: 'dlq', summary: "A task's state changes, oldest first: each attempt, its error, and how it ended (dead, redriven, completed)",
      status: 200, errors: [404],
      handle: async ({ params }) => {
        await store.taskGet({ id: params.id! });
        const events = await engine.queue.history(params.id!);
        return { events: events.map((e) => ({ version: e.version, type: e.type, timestamp: new Date(e.timestamp).toISOString(), data: e.data })) };
      },
    }),
    route({
      method: 'get', path: '/runs/{id}', tag: 'runs', summary: 'One run of any kind with its steps (a stored execution, a code run, a session)',
      status: 200, response: runResponse, errors: [404],
      handle: async ({ params }) => {
        const view = await readRunView(store, params.id!);
        if (!view) throw new NotFoundError(`run ${params.id} not found`);
        return runRecord(view);
      },
    }),
    route({
      method: 'post', path: '/runs/{id}/cancel', tag: 'runs', summary: 'Cancel a run: its running step is told, no new step starts, compensations run (409 when it has ended)',
      status: 202, errors: [404, 409],
      handle: async ({ params }) => {
        await engine.cancel(params.id!);
        return { id: params.id!, cancel_requested: true };
      },
    }),
    route({
      method: 'post', path: '/runs/{id}/signal', tag: 'runs', summary: "Send a signal to a run's `waitForEvent(name)`; a repeated idempotency_key is ignored",
      body: signalBody, status: 202, errors: [400, 404],
      handle: async ({ params, body }) => {
        await engine.signal(params.id!, body.name, body.payload ?? null, body.idempotency_key ? { idempotencyKey: body.idempotency_key } : {});
        return { id: params.id!, signal: body.name };
      },
    }),
  ];
}
