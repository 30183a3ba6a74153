import { z } from 'zod';
import type { Engine } from '../../engine.js';
import { iso } from '../../iso.js';
import type { RateLimitInfo } from '../../runtime/rates/limits.js';
import { route } from '../route.js';

/*
 * Named rate limits (docs/flow-control.md): steps name them (`rateLimit`) and wait, durably, for room. Defining a
 * limit again changes it at once in every process.
 */

const limitResponse = z.object({
  name: z.string(),
  limit: z.int().describe('units per period'),
  period_ms: z.int(),
  key: z
    .string()
    .nullable()
    .describe("an expression over the run's input (input.user_id) or a constant: one bucket per key"),
  created_at: z.string(),
  updated_at: z.string(),
});

const defineRequest = z.object({
  name: z.string().describe('1-100 letters, digits or _.:-'),
  limit: z.number().describe('units per period, a whole number from 1'),
  period: z.union([z.number(), z.string()]).describe("ms, or a string like '1s', '1m', '1h': from 1s to 30d"),
  key: z.string().nullable().optional().describe("'input.user_id' or a constant; default: one bucket for all"),
});

const record = (l: RateLimitInfo) => ({
  name: l.name,
  limit: l.limit,
  period_ms: l.periodMs,
  key: l.key,
  created_at: iso(l.createdAt),
  updated_at: iso(l.updatedAt),
});

export function limitRoutes(engine: Engine) {
  const { limits } = engine;
  return [
    route({
      method: 'post',
      path: '/limits',
      tag: 'limits',
      summary: 'Create or change a named rate limit; a change applies at once, in every process',
      body: defineRequest,
      status: 200,
      response: limitResponse,
      errors: [400],
      handle: async ({ body }) => record(await limits.define(body)),
    }),
    route({
      method: 'get',
      path: '/limits',
      tag: 'limits',
      summary: 'The named rate limits, by name',
      status: 200,
      response: z.object({ limits: z.array(limitResponse) }),
      handle: async () => ({ limits: (await limits.list()).map(record) }),
    }),
    route({
      method: 'get',
      path: '/limits/{name}',
      tag: 'limits',
      summary: 'One named rate limit',
      status: 200,
      response: limitResponse,
      errors: [404],
      handle: async ({ params }) => record(await limits.get(params.name!)),
    }),
    route({
      method: 'delete',
      path: '/limits/{name}',
      tag: 'limits',
      summary: 'Delete a named rate limit and its buckets: steps naming it fail at their next take, naming it',
      status: 204,
      errors: [404],
      handle: ({ params }) => limits.delete(params.name!),
    }),
  ];
}
