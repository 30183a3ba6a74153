import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { iso } from '../../iso.js';
import { route } from '../route.js';

/*
 * The limits in force, in one read (the dashboard's Limits page, `runledger limits list`): the concurrency keys with
 * runs in or waiting, and the named rate limits. Changing a rate limit stays with /limits.
 */

const MAX_KEYS = 1000;

const keyRecord = z.object({
  key: z.string().describe("the slot runs are counted under: '<workflow>:<key value>', or the key of a global limit"),
  limit: z.int(),
  in_use: z.int(),
  waiting: z.int(),
  active_runs: z.array(z.string()),
  waiting_runs: z.array(z.string()).describe('next first'),
  oldest_waiting_since: z.string().nullable(),
});

const rateRecord = z.object({
  name: z.string(),
  limit: z.int().describe('units per period'),
  period_ms: z.int(),
  key: z.string().nullable(),
});

export const flowResponse = z.object({
  concurrency: z.array(keyRecord),
  truncated: z.boolean().describe(`more than ${MAX_KEYS} keys were in use: the first ${MAX_KEYS} by key are shown`),
  rate_limits: z.array(rateRecord),
});

export function flowRoutes(engine: Engine) {
  return [
    route({
      method: 'get',
      path: '/flow',
      tag: 'limits',
      summary: 'The limits in force: concurrency keys with runs in or waiting, and the named rate limits',
      status: 200,
      response: flowResponse,
      handle: async () => {
        const [{ keys, truncated }, rates] = await Promise.all([
          engine.runs.concurrency({ max: MAX_KEYS }),
          engine.limits.list(),
        ]);
        return {
          concurrency: keys.map((k) => ({
            key: k.key,
            limit: k.limit,
            in_use: k.active.length,
            waiting: k.waiting.length,
            active_runs: k.active,
            waiting_runs: k.waiting,
            oldest_waiting_since: k.oldestWaitingSince === null ? null : iso(k.oldestWaitingSince),
          })),
          truncated,
          rate_limits: rates.map((l) => ({ name: l.name, limit: l.limit, period_ms: l.periodMs, key: l.key })),
        };
      },
    }),
  ];
}
