import { z } from 'zod';
import { ruleRequest } from '../../triggers/rules.js';
import type { TriggerService } from '../../triggers/service.js';
import { route, type Route } from '../route.js';

const time = z.iso.datetime();

/**
 * Edit a rule in place: the dashboard's rule form saves with it.
 *
 * @example mount(new Hono(), ruleEditRoutes(service));
 */
export function ruleEditRoutes({ rules }: TriggerService): Route[] {
  return [
    route({
      method: 'put',
      path: '/rules/{id}',
      tag: 'rules',
      summary:
        'Replace a rule’s description, pattern, target and input (its name and whether it is enabled stay): events routed from now on match the new pattern',
      // checked by the service, which reports every problem with its path (the pattern's, the target's too)
      body: z.unknown().meta(z.toJSONSchema(ruleRequest, { io: 'input' }) as Record<string, unknown>),
      status: 200,
      response: z.object({
        id: z.string(),
        name: z.string(),
        description: z.string().optional(),
        pattern: z.record(z.string(), z.unknown()),
        target: z.union([z.object({ workflow: z.string() }), z.object({ agent: z.string() })]),
        input: z.unknown(),
        enabled: z.boolean(),
        created_at: time,
        updated_at: time,
      }),
      errors: [400, 404],
      handle: ({ params, body }) => rules.update(params.id!, body),
    }),
  ];
}
