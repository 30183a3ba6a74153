import { z } from 'zod';
import { ValidationError } from '../../errors.js';
import { matches, validatePattern } from '../../triggers/pattern.js';
import { parseCron } from '../../triggers/schedules.js';
import type { TriggerService } from '../../triggers/service.js';
import { route, type Route } from '../route.js';

/** How many of the newest events a pattern is tried on, at most. */
const MAX_EVENTS = 100;
/** How many slots a cron preview lists. */
const SLOTS = 10;

const time = z.iso.datetime();

/**
 * What a rule or a schedule would do, before it is saved: a pattern tried on the newest stored events, and a cron's
 * next ten slots in its time zone. Neither writes anything.
 *
 * @example mount(new Hono(), triggerPreviewRoutes(service));
 */
export function triggerPreviewRoutes({ events }: TriggerService): Route[] {
  return [
    route({
      method: 'post',
      path: '/rules/preview',
      tag: 'rules',
      summary: `Try an event pattern on the newest stored events (up to ${MAX_EVENTS}): the ones it matches`,
      body: z
        .object({
          pattern: z.unknown().describe('an EventBridge-style pattern, as a rule takes'),
          events: z.int().min(1).max(MAX_EVENTS).default(50).describe('how many of the newest events to try it on'),
        })
        .strict(),
      status: 200,
      response: z.object({
        tried: z.int(),
        matched: z.array(z.object({ id: z.string(), source: z.string(), 'detail-type': z.string(), time })),
      }),
      errors: [400],
      handle: async ({ body }) => {
        const problems = validatePattern(body.pattern);
        if (problems.length) throw ValidationError.of(problems);
        const recent = await events.list({ limit: body.events });
        const matched = [];
        for (const summary of recent.events) {
          const { envelope } = await events.get(summary.id);
          if (matches(body.pattern as Record<string, unknown>, envelope))
            matched.push({
              id: envelope.id,
              source: envelope.source,
              'detail-type': envelope['detail-type'],
              time: envelope.time,
            });
        }
        return { tried: recent.events.length, matched };
      },
    }),
    route({
      method: 'post',
      path: '/schedules/preview',
      tag: 'schedules',
      summary: `A cron expression's next ${SLOTS} slots in a time zone`,
      body: z.object({ cron: z.string().min(1).max(256), timezone: z.string().min(1).max(64).default('UTC') }).strict(),
      status: 200,
      response: z.object({ next: z.array(time) }),
      errors: [400],
      handle: async ({ body }) => ({
        next: parseCron(body.cron, body.timezone)
          .nextRuns(SLOTS)
          .map((d) => d.toISOString()),
      }),
    }),
  ];
}
