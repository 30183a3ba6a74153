import { z } from 'zod';

const time = z.iso.datetime().describe('ISO 8601 UTC');

export const workflowResponse = z.object({
  id: z.string(),
  version: z.int(),
  name: z.string(),
  description: z.string().optional(),
  enabled: z.boolean(),
  steps: z.array(z.record(z.string(), z.unknown())),
  created_at: time,
  updated_at: time,
});

export const executeRequest = z
  .object({
    trigger_data: z.record(z.string(), z.unknown()).optional(),
    trigger_type: z.string().min(1).max(64).optional(),
  })
  .strict();

export const executeResponse = z.object({ execution_id: z.string(), workflow_id: z.string(), status: z.literal('pending') });

const executionStatus = z.enum(['pending', 'running', 'success', 'failed', 'cancelled']);

export const executionSummary = z.object({
  workflow_id: z.string(),
  execution_id: z.string(),
  workflow_version: z.int(),
  status: executionStatus,
  trigger_type: z.string(),
  started_at: time,
  finished_at: time.nullable(),
  error: z.string().nullable(),
});

export const executionRecord = executionSummary.extend({
  trigger_data: z.record(z.string(), z.unknown()),
  rerun_of: z.string().optional().describe('set on a rerun: the execution it reran'),
  steps: z.array(
    z.object({
      step_id: z.string(),
      type: z.string(),
      status: z.enum(['pending', 'running', 'success', 'failed', 'skipped']),
      attempts: z.int(),
      started_at: time.nullable(),
      finished_at: time.nullable(),
      duration_ms: z.number().nullable(),
      input: z.unknown(),
      output: z.unknown(),
      error: z.string().nullable(),
    }),
  ),
});

export const executionPage = z.object({ executions: z.array(executionSummary), count: z.int(), last_key: z.string().nullable() });

export const pageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    last_key: z.string().max(200).optional(),
  })
  .strict();

export const secretRequest = z.object({ name: z.string(), value: z.string() }).strict();
export const secretInfo = z.object({ name: z.string(), created_at: time, updated_at: time });

export const deadTask = z.object({
  id: z.string(),
  queue: z.string(),
  attempts: z.int(),
  max_attempts: z.int(),
  last_error: z.string().nullable(),
  payload: z.unknown(),
  created_at: time,
  updated_at: time,
});

export const errorBody = z.object({
  error: z.object({ code: z.string(), message: z.string(), problems: z.array(z.object({ path: z.string(), message: z.string() })).optional() }),
});
