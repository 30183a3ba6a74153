import { z } from 'zod';
import type { WorkflowService } from '../../workflows/service.js';
import { route } from '../route.js';
import { workflowResponse } from '../schemas.js';

const instantiateRequest = z
  .object({
    name: z.string().min(1).max(200).describe("the new workflow's name (unique, like every workflow's)"),
    params: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("each parameter's value, of its declared type; a parameter with a default may be left out"),
  })
  .strict();

/** Workflow templates (brief 004 §15): a stored workflow with `parameters` is instantiated, never executed. */
export function templateRoutes({ definitions, templates }: WorkflowService) {
  return [
    route({
      method: 'post',
      path: '/workflows/{id}/instantiate',
      tag: 'workflows',
      summary:
        'Store a new workflow made of a template with every `{{params.<name>}}` filled in; a 400 names each missing, unknown or mistyped parameter; 409 when the workflow is not a template',
      body: instantiateRequest,
      status: 201,
      response: workflowResponse,
      errors: [400, 404, 409, 413],
      handle: async ({ params, body }) => templates.instantiate(await definitions.resolve(params.id!), body),
    }),
  ];
}
