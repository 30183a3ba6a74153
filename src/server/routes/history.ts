import type { Engine } from '../../engine.js';
import type { Definitions } from '../../workflows/definitions.js';
import { route, type Route } from '../route.js';

/**
 * The histories the dashboard shows beside the current state: a stored workflow's saved versions,
 * and a task's state changes (each attempt, its error, how it ended). Reading, cancelling and
 * signalling a run are `runRoutes` and `controlRoutes`.
 *
 * @example mount(new Hono(), historyRoutes(engine, workflows.definitions));
 */
export function historyRoutes(engine: Engine, definitions: Definitions): Route[] {
  return [
    route({
      method: 'get',
      path: '/workflows/{id}/versions',
      tag: 'workflows',
      summary: "A stored workflow's saved versions, oldest first, each with its definition",
      status: 200,
      errors: [404],
      handle: async ({ params }) => ({ versions: await definitions.versions(await definitions.resolve(params.id!)) }),
    }),
    route({
      method: 'get',
      path: '/tasks/{id}/history',
      tag: 'dlq',
      summary:
        "A task's state changes, oldest first: each attempt, its error, and how it ended (dead, redriven, completed)",
      status: 200,
      errors: [404],
      handle: async ({ params }) => {
        await engine.operator.task(params.id!);
        const events = await engine.queue.history(params.id!);
        return {
          events: events.map((e) => ({
            version: e.version,
            type: e.type,
            timestamp: new Date(e.timestamp).toISOString(),
            data: e.data,
          })),
        };
      },
    }),
  ];
}
