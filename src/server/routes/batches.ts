import { z } from 'zod';
import { MAX_BATCH } from '../../workflows/batches.js';
import type { WorkflowService } from '../../workflows/service.js';
import { actorName } from '../identity.js';
import { route } from '../route.js';
import { executionSummary, lastKey } from '../schemas.js';

const batchRequest = z
  .object({
    inputs: z
      .array(z.record(z.string(), z.unknown()).describe("one execution's trigger data"))
      .min(1)
      .max(MAX_BATCH)
      .describe(`the trigger data of each execution, 1 to ${MAX_BATCH}: one execution per input, each started once`),
    idempotency_key: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('the same key again (for this workflow) starts nothing and answers the first batch (200, `duplicate`)'),
  })
  .strict();

const started = z.object({
  batch_id: z.string(),
  workflow_id: z.string(),
  total: z.int(),
  execution_ids: z.array(z.string()).describe('in the order of the inputs'),
  duplicate: z.boolean().describe('true: the idempotency_key started this batch before; nothing was started (200)'),
});

const counted = z.enum([...executionSummary.shape.status.options, 'deleted']);

const batchRecord = z.object({
  batch_id: z.string(),
  workflow_id: z.string(),
  status: z
    .enum(['running', 'success', 'partial', 'failed', 'cancelled'])
    .describe(
      'running until every execution has ended; then success (all succeeded), cancelled (a cancel request stopped some), failed (none succeeded) or partial',
    ),
  counts: z.record(counted, z.int()).describe('executions by status; deleted: removed by retention'),
  progress: z.object({ ended: z.int(), total: z.int() }),
  execution_ids: z.array(z.string()).describe('in the order of the inputs'),
  created_at: z.string(),
  cancel_reason: z.string().nullable().describe("the cancel request's reason; null when none was made"),
});

const listQuery = z
  .object({ limit: z.coerce.number().int().min(1).max(100).default(20), last_key: lastKey('bt') })
  .strict();

/** Batches of executions of a stored workflow (brief 004 §15): start, read, list, cancel. */
export function batchRoutes({ definitions, batches }: WorkflowService) {
  return [
    route({
      method: 'post',
      path: '/workflows/{id}/batches',
      tag: 'batches',
      summary:
        'Start one execution per input, all or none (202); a repeated `idempotency_key` starts nothing and is 200 with the first batch',
      body: batchRequest,
      status: 202,
      response: started,
      errors: [400, 404, 413],
      handle: async ({ params, body }) => {
        const answer = await batches.start(await definitions.resolve(params.id!), body);
        return answer.duplicate ? Response.json(answer, { status: 200 }) : answer;
      },
    }),
    route({
      method: 'get',
      path: '/batches',
      tag: 'batches',
      summary: 'Batches, newest first (`last_key` continues after a page)',
      query: listQuery,
      status: 200,
      response: z.object({ batches: z.array(batchRecord), count: z.int(), last_key: z.string().nullable() }),
      errors: [400],
      handle: ({ query }) => batches.list(query),
    }),
    route({
      method: 'get',
      path: '/batches/{id}',
      tag: 'batches',
      summary: "One batch: its status, its executions' counts by status and its progress",
      status: 200,
      response: batchRecord,
      errors: [404],
      handle: ({ params }) => batches.get(params.id!),
    }),
    route({
      method: 'post',
      path: '/batches/{id}/cancel',
      tag: 'batches',
      summary: 'Cancel every execution of the batch that has not ended (409 when all have)',
      body: z
        .object({ reason: z.string().min(1).max(500).optional() })
        .strict()
        .optional(),
      status: 202,
      response: z.object({ batch_id: z.string(), cancelled: z.int().describe('executions asked to cancel') }),
      errors: [400, 404, 409],
      handle: ({ params, body, actor }) =>
        batches.cancel(params.id!, body?.reason, actor ? actorName(actor) : undefined),
    }),
  ];
}
