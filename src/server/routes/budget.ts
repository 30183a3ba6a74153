import { z } from 'zod';
import type { Engine } from '../../engine.js';
import type { Budget } from '../../runtime/flow.js';
import { decideBudget } from '../../runtime/pass/budget-decision.js';
import { whoActs } from '../identity.js';
import { route, type Route } from '../route.js';

const by = z
  .string()
  .min(1)
  .max(200)
  .optional()
  .describe('who decides, in open mode only: with an API key, the decision journals the key (this is ignored)');

const approveBody = z
  .object({
    by,
    extend: z
      .object({
        tokens: z.number().positive().optional(),
        cost: z.number().positive().optional(),
        tool_calls: z.int().positive().optional(),
        steps: z.int().positive().optional(),
        wall_time: z
          .union([z.int().positive(), z.string().min(1).max(20)])
          .optional()
          .describe("ms, or '10m', '1h'"),
      })
      .strict()
      .optional()
      .describe('what to add to the budget; default: the budget the run started with, again'),
  })
  .strict();

const decided = z.object({
  run_id: z.string(),
  decision: z.enum(['approve', 'reject']),
  round: z.int().describe('the budget wait decided: 1 for the first of the run'),
  reason: z.string().describe('what the run waited for: `budget: 41,200 of 40,000 tokens — approve to continue`'),
});

/**
 * A person's decision on a run waiting for its budget (`onExceed: 'approve'`): approve, with more budget, or
 * reject (the run fails with a BudgetExceededError). 409 when the run is not waiting for one.
 *
 * @example mount(app, budgetRoutes(engine)); // POST /runs/run_…/budget/approve { "by": "ana" }
 */
export function budgetRoutes(engine: Engine): Route[] {
  return [
    route({
      method: 'post',
      path: '/runs/{id}/budget/approve',
      tag: 'runs',
      summary: 'Let a run waiting for its budget go on, its budget extended (default: the same budget again)',
      body: approveBody,
      status: 202,
      response: decided,
      errors: [400, 404, 409],
      handle: async ({ params, body, actor }) => {
        const e = body.extend;
        const extend: Budget | undefined = e && {
          ...(e.tokens === undefined ? {} : { tokens: e.tokens }),
          ...(e.cost === undefined ? {} : { cost: e.cost }),
          ...(e.tool_calls === undefined ? {} : { toolCalls: e.tool_calls }),
          ...(e.steps === undefined ? {} : { steps: e.steps }),
          ...(e.wall_time === undefined ? {} : { wallTime: e.wall_time }),
        };
        const wait = await decideBudget(engine.runtime, params.id!, {
          decision: 'approve',
          by: whoActs(actor, body.by) ?? '',
          ...(extend ? { extend } : {}),
        });
        return { run_id: params.id!, decision: 'approve' as const, ...wait };
      },
    }),
    route({
      method: 'post',
      path: '/runs/{id}/budget/reject',
      tag: 'runs',
      summary: 'Fail a run waiting for its budget (a BudgetExceededError naming the budget; its compensations run)',
      body: z.object({ by }).strict(),
      status: 202,
      response: decided,
      errors: [400, 404, 409],
      handle: async ({ params, body, actor }) => {
        const by = whoActs(actor, body.by) ?? '';
        const wait = await decideBudget(engine.runtime, params.id!, { decision: 'reject', by });
        return { run_id: params.id!, decision: 'reject' as const, ...wait };
      },
    }),
  ];
}
