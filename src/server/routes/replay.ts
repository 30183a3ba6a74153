import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { NotFoundError } from '../../errors.js';
import type { Workflow } from '../../runtime/workflow.js';
import { recordedHistory, replayHistories } from '../../runtime/replay.js';
import { route, type Route } from '../route.js';

const replayed = z.object({
  run_id: z.string(),
  workflow: z.string(),
  replays: z.boolean().describe("true: the server's code asks for every call the run's history holds, in its order"),
  divergence: z
    .string()
    .nullable()
    .describe('where the code first departs from the history, in plain words (docs/replay.md); null when it replays'),
});

/**
 * Replay against the running code (docs/replay.md): a run's history through the workflows this server registers
 * (of each name, the version new runs start on), in memory and writing nothing.
 *
 * @example mount(new Hono(), replayRoutes(engine));
 */
export function replayRoutes(engine: Engine): Route[] {
  return [
    route({
      method: 'post',
      path: '/runs/{id}/replay',
      tag: 'runs',
      summary:
        "Replay a run's recorded history through the server's current code, with no side effects: it replays, or its first divergence",
      status: 200,
      response: replayed,
      errors: [404],
      handle: async ({ params }) => {
        if (!(await engine.runs.find(params.id!))) throw new NotFoundError(`run ${params.id} not found`);
        const code = engine.runtime.names().map((name) => engine.runtime.registered(name) as Workflow);
        const [result] = await replayHistories([await recordedHistory(engine, params.id!)], code);
        return {
          run_id: result!.runId,
          workflow: result!.workflow,
          replays: result!.replays,
          divergence: result!.divergence ?? null,
        };
      },
    }),
  ];
}
