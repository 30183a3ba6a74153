import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { decideEffect } from '../../runtime/pass/effect-decision.js';
import { ValidationError } from '../../errors.js';
import { whoActs } from '../identity.js';
import { route, type Route } from '../route.js';

const body = z
  .object({
    decision: z
      .enum(['happened', 'again', 'fail'])
      .describe('happened: the step completes with `output`; again: it runs once more; fail: it fails for good'),
    by: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('who decides, in open mode (with a key, the key is journaled and this is ignored)'),
    output: z.unknown().optional().describe("happened only: the step's output, as if its call had returned it"),
  })
  .strict();

const decided = z.object({
  run_id: z.string(),
  decision: z.enum(['happened', 'again', 'fail']),
  seq: z.union([z.int(), z.string()]).describe('the effect step decided'),
  name: z.string(),
  attempt: z.int().describe('the attempt whose outcome was unknown'),
});

/**
 * A person's decision on an effect step whose outcome is unknown (`effect: { atMostOnce: true }` without reconcile,
 * after a crash between its call and its record). 409 when the run is not waiting for one.
 *
 * @example mount(app, effectRoutes(engine)); // POST /runs/run_…/effect/decide { "decision": "happened", "by": "ana" }
 */
export function effectRoutes(engine: Engine): Route[] {
  return [
    route({
      method: 'post',
      path: '/runs/{id}/effect/decide',
      tag: 'runs',
      summary: 'Say whether the effect of a step with an unknown outcome happened, or run it again, or fail it',
      body,
      status: 202,
      response: decided,
      errors: [400, 404, 409],
      handle: async ({ params, body, actor }) => {
        const by = whoActs(actor, body.by);
        if (by === undefined) throw new ValidationError('by', 'is required: who decides (or send an API key)');
        const wait = await decideEffect(engine.runtime, params.id!, {
          decision: body.decision,
          by,
          ...(body.output === undefined ? {} : { output: body.output }),
        });
        return { run_id: params.id!, decision: body.decision, ...wait };
      },
    }),
  ];
}
