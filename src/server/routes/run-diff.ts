import type { Engine } from '../../engine.js';
import { diffRuns } from '../../runtime/read/diff.js';
import { runDiffRecord, runDiffResponse } from '../records/run-diff.js';
import { storedNames, type WorkflowNames } from '../records/runs.js';
import { route, type Route } from '../route.js';

/**
 * Two runs of any kind side by side (`GET /runs/{a}/diff/{b}`): their steps aligned in call order, and what differs
 * — inputs, outputs, errors, attempts, durations, statuses. Meant for a rerun or retry against its original.
 *
 * @example mount(new Hono(), runDiffRoutes(engine, definitions));
 */
export function runDiffRoutes(engine: Engine, workflows: WorkflowNames): Route[] {
  return [
    route({
      method: 'get',
      path: '/runs/{a}/diff/{b}',
      tag: 'runs',
      summary:
        'Two runs aligned step by step (by name, in call order), with what differs: a step of one run only is added (in b) or removed (in a)',
      status: 200,
      response: runDiffResponse,
      errors: [404],
      handle: async ({ params }) => {
        // whole values (not blob references): two big outputs are compared by their content
        const [a, b] = await Promise.all([engine.runs.view(params.a!), engine.runs.view(params.b!)]);
        return runDiffRecord(diffRuns(a, b), await storedNames(workflows, [a, b]));
      },
    }),
  ];
}
