import { z } from 'zod';
import type { WorkflowService } from '../../workflows/service.js';
import { definitionSchema } from '../../workflows/schema.js';
import { actorName } from '../identity.js';
import { route } from '../route.js';
import { parseTraceparent } from '../../observe/trace.js';
import {
  executeRequest,
  executeResponse,
  executionPage,
  executionRecord,
  executionSummary,
  lastKey,
  pageQuery,
  rerunRequest,
  retryRequest,
  workflowResponse,
} from '../schemas.js';

/** The answer to an execute: a repeated Idempotency-Key answers the first execution as it is now, like every idempotent route (202 first, 200 and `duplicate` after). */
const executed = z.object({
  execution_id: z.string(),
  workflow_id: z.string(),
  workflow_version: z.int().describe('the version the execution runs (a repeat after an update still shows its own)'),
  status: executionSummary.shape.status,
  duplicate: z.boolean().describe('true: the Idempotency-Key started this execution before; nothing was started (200)'),
});

/** A cancel's body: why, in words a person reads in the record and the CLI. */
const cancelRequest = z
  .object({
    reason: z.string().min(1).max(500).optional(),
    delete_artifacts: z
      .boolean()
      .optional()
      .describe(
        'compensations read it as {{cancel.delete_artifacts}}: delete what the execution produced (brief 004 §9.2)',
      ),
  })
  .strict();

const listQuery = z
  .object({ limit: z.coerce.number().int().min(1).max(100).default(100), last_key: lastKey('wf') })
  .strict();

/**
 * A definition's body as the API takes it: any JSON reaches `definitions`, whose one check answers
 * every problem at once (shape, templates, references, secrets; a schema check here would answer the
 * shape's problems alone and hide the rest). The document shows the definition's schema.
 */
function definitionBody() {
  const { $schema: _, ...document } = z.toJSONSchema(definitionSchema, { io: 'input', unrepresentable: 'any' });
  return z.unknown().meta(document);
}

/** Stored workflows and their executions. */
export function workflowRoutes({ definitions, executions }: WorkflowService) {
  const definition = definitionBody();
  return [
    route({
      method: 'post',
      path: '/workflows',
      tag: 'workflows',
      summary: 'Store a workflow definition (version 1); a 400 lists every problem of it at once',
      body: definition,
      status: 201,
      response: workflowResponse,
      errors: [400, 413],
      handle: ({ body }) => definitions.create(body),
    }),
    route({
      method: 'get',
      path: '/workflows',
      tag: 'workflows',
      summary: 'List stored workflows, newest first (by creation; `last_key` continues after a page)',
      query: listQuery,
      status: 200,
      response: z.object({ workflows: z.array(workflowResponse), count: z.int(), last_key: z.string().nullable() }),
      handle: async ({ query }) => {
        const page = await definitions.list({
          limit: query.limit + 1,
          newestFirst: true,
          ...(query.last_key ? { before: query.last_key } : {}),
        });
        const workflows = page.slice(0, query.limit);
        return {
          workflows,
          count: workflows.length,
          last_key: page.length > query.limit ? (workflows.at(-1)?.id ?? null) : null,
        };
      },
    }),
    route({
      method: 'get',
      path: '/workflows/{id}',
      tag: 'workflows',
      summary: 'One stored workflow',
      status: 200,
      response: workflowResponse,
      errors: [404],
      handle: async ({ params }) => definitions.get(await definitions.resolve(params.id!)),
    }),
    route({
      method: 'put',
      path: '/workflows/{id}',
      tag: 'workflows',
      summary:
        'Replace a definition as a new version; running executions keep theirs; a 400 lists every problem of it at once',
      body: definition,
      status: 200,
      response: workflowResponse,
      errors: [400, 404, 413],
      handle: async ({ params, body }) => definitions.update(await definitions.resolve(params.id!), body),
    }),
    route({
      method: 'delete',
      path: '/workflows/{id}',
      tag: 'workflows',
      summary: 'Delete a workflow',
      status: 204,
      errors: [404],
      handle: async ({ params }) => definitions.delete(await definitions.resolve(params.id!)),
    }),
    route({
      method: 'post',
      path: '/workflows/{id}/execute',
      tag: 'executions',
      summary:
        'Start an execution: 202 with status pending; the same `Idempotency-Key` again starts nothing and is 200 with the first execution, its status now and `duplicate: true`',
      body: executeRequest.optional(),
      status: 202,
      response: executed,
      errors: [400, 404, 413],
      handle: async ({ params, body, headers }) => {
        const key = headers.get('idempotency-key');
        const traceparent = parseTraceparent(headers.get('traceparent'));
        const answer = await executions.execute(await definitions.resolve(params.id!), {
          ...body,
          ...(key !== null ? { idempotencyKey: key } : {}),
          ...(traceparent ? { traceparent } : {}),
        });
        return answer.duplicate ? Response.json(answer, { status: 200 }) : answer;
      },
    }),
    route({
      method: 'get',
      path: '/workflows/{id}/executions',
      tag: 'executions',
      summary: 'Executions of a workflow, newest first',
      query: pageQuery,
      status: 200,
      response: executionPage,
      errors: [400],
      handle: async ({ params, query }) => executions.list(await definitions.resolve(params.id!), query),
    }),
    route({
      method: 'get',
      path: '/workflows/{id}/executions/{execution_id}',
      tag: 'executions',
      summary: 'One execution with its steps',
      status: 200,
      response: executionRecord,
      errors: [404],
      handle: async ({ params }) => executions.get(await definitions.resolve(params.id!), params.execution_id!),
    }),
    route({
      method: 'post',
      path: '/workflows/{id}/executions/{execution_id}/cancel',
      tag: 'executions',
      summary:
        'Cancel a running execution (409 when finished); `reason` is journaled, shown as `cancel_reason` (`cancelled_by: user`)',
      body: cancelRequest.optional(),
      status: 202,
      response: z.object({ execution_id: z.string(), status: z.literal('cancelling') }),
      errors: [400, 404, 409],
      handle: async ({ params, body, actor }) => {
        const options = {
          ...(body?.delete_artifacts ? { delete_artifacts: true } : {}),
          ...(actor ? { actor: actorName(actor) } : {}),
        };
        await executions.cancel(await definitions.resolve(params.id!), params.execution_id!, body?.reason, options);
        return { execution_id: params.execution_id!, status: 'cancelling' };
      },
    }),
    route({
      method: 'post',
      path: '/workflows/{id}/executions/{execution_id}/retry',
      tag: 'executions',
      summary:
        'Retry the failed branches (all, or `branches`) as a new execution that reuses every step that succeeded',
      body: retryRequest.optional(),
      status: 202,
      response: executeResponse.extend({ branches: z.array(z.string()) }),
      errors: [400, 404, 409],
      handle: async ({ params, body }) =>
        executions.retry(await definitions.resolve(params.id!), params.execution_id!, body ?? {}),
    }),
    route({
      method: 'post',
      path: '/workflows/{id}/executions/{execution_id}/rerun',
      tag: 'executions',
      summary:
        'Start a new execution that reuses the recorded outputs of the steps before `from_step` (default: the first step; optionally with new trigger data)',
      body: rerunRequest.optional(),
      status: 202,
      response: executeResponse,
      errors: [400, 404, 413],
      handle: async ({ params, body }) =>
        executions.rerun(await definitions.resolve(params.id!), params.execution_id!, body ?? {}),
    }),
  ];
}
