import { z } from 'zod';
import type { RunView } from '../../runtime/read/view.js';

/** A run's usage and budget as the API shows them (in `GET /runs/{id}`): what it used, and its caps. */
export const usageRecord = z.object({
  tokens: z.number(),
  cost: z.number(),
  tool_calls: z.number(),
  steps: z.int().describe('step and poll calls started'),
});
export const budgetRecord = z.object({
  tokens: z.number().nullable(),
  cost: z.number().nullable(),
  tool_calls: z.number().nullable(),
  steps: z.number().nullable(),
  wall_time: z.union([z.number(), z.string()]).nullable(),
  on_exceed: z.enum(['fail', 'approve']),
});

/**
 * What a run used (`ctx.usage` totals and its steps) and its budget (null when it has none), for its record.
 *
 * @example { ...runRecord(view), ...usageOf(view) }
 */
export function usageOf(view: RunView): {
  usage: z.infer<typeof usageRecord>;
  budget: z.infer<typeof budgetRecord> | null;
} {
  const b = view.budget;
  return {
    usage: {
      tokens: view.usage?.tokens ?? 0,
      cost: view.usage?.cost ?? 0,
      tool_calls: view.usage?.toolCalls ?? 0,
      steps: view.steps.length,
    },
    budget: b
      ? {
          tokens: b.tokens ?? null,
          cost: b.cost ?? null,
          tool_calls: b.toolCalls ?? null,
          steps: b.steps ?? null,
          wall_time: b.wallTime ?? null,
          on_exceed: b.onExceed ?? 'fail',
        }
      : null,
  };
}
