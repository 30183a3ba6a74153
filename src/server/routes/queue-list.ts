import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { route, type Route } from '../route.js';

const queue = z.object({
  queue: z.string(),
  ready: z.int(),
  due: z.int().describe('ready tasks whose run-at has come: the backlog'),
  running: z.int(),
  dead: z.int(),
  paused: z.boolean().describe('none of its tasks is claimed (POST /operator/pause)'),
});

/**
 * Every queue that holds a task or is paused, with its tasks by state: what the dashboard's queues view lists, each
 * with a pause or resume button.
 *
 * @example mount(new Hono(), queueListRoutes(engine));
 */
export function queueListRoutes(engine: Engine): Route[] {
  return [
    route({
      method: 'get',
      path: '/queues',
      tag: 'operator',
      summary: 'Every queue that holds a task or is paused, by name: its tasks by state and whether it is paused',
      status: 200,
      response: z.object({ queues: z.array(queue) }),
      handle: async () => {
        const [stats, pauses] = await Promise.all([engine.operator.queueStats(), engine.operator.pauses()]);
        const paused = new Set(pauses.filter((p) => p.kind === 'queue').map((p) => p.name));
        const byName = new Map(
          stats.map((s) => [
            s.queue,
            {
              queue: s.queue,
              ready: s.ready,
              due: s.due,
              running: s.running,
              dead: s.dead,
              paused: paused.has(s.queue),
            },
          ]),
        );
        for (const name of paused)
          if (!byName.has(name)) byName.set(name, { queue: name, ready: 0, due: 0, running: 0, dead: 0, paused: true });
        return { queues: [...byName.values()].sort((a, b) => a.queue.localeCompare(b.queue)) };
      },
    }),
  ];
}
