import { z } from 'zod';
import { BACKFILL_SLOTS } from '../../triggers/schedules.js';
import type { TriggerService } from '../../triggers/service.js';
import { route, type Route } from '../route.js';

const time = z.iso.datetime({ offset: true });

/**
 * Backfill a schedule over a past window: a run per slot, once per slot however often it is asked.
 *
 * @example mount(new Hono(), scheduleBackfillRoutes(service));
 */
export function scheduleBackfillRoutes({ schedules }: TriggerService): Route[] {
  return [
    route({
      method: 'post',
      path: '/schedules/{id}/backfill',
      tag: 'schedules',
      summary: `Start a run for each slot of a past window (from ≤ slot < to, at most ${BACKFILL_SLOTS}); a slot that already has its run (fired or backfilled) keeps it`,
      body: z.object({ from: time, to: time }).strict(),
      status: 200,
      response: z.object({
        runs: z.array(
          z.object({ slot: z.iso.datetime(), run_id: z.string(), kind: z.enum(['execution', 'workflow', 'session']) }),
        ),
      }),
      errors: [400, 404],
      handle: async ({ params, body }) => ({
        runs: await schedules.backfill(params.id!, Date.parse(body.from), Date.parse(body.to)),
      }),
    }),
  ];
}
