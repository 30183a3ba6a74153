import { z } from 'zod';
import { ValidationError } from '../errors.js';
import {
  batchSchema,
  budgetSchema,
  concurrencySchema,
  debounceSchema,
  runFlowSchemas,
  throttleSchema,
} from '../workflows/flow.js';
import { cancelRecord } from './records/runs.js';

const time = z.iso.datetime().describe('ISO 8601 UTC');

export const workflowResponse = z.object({
  id: z.string(),
  version: z.int(),
  name: z.string(),
  description: z.string().optional(),
  enabled: z.boolean(),
  steps: z.array(z.record(z.string(), z.unknown())),
  parameters: z
    .record(
      z.string(),
      z.object({ type: z.string(), default: z.unknown().optional(), description: z.string().optional() }),
    )
    .optional()
    .describe('a template: {{params.<name>}} in its steps; POST /workflows/{id}/instantiate makes a workflow of it'),
  concurrency: concurrencySchema.optional(),
  priority: z.int().optional(),
  throttle: throttleSchema.optional(),
  debounce: debounceSchema.optional(),
  batch: batchSchema.optional(),
  budget: budgetSchema.optional(),
  created_at: time,
  updated_at: time,
});

export const executeRequest = z
  .object({
    trigger_data: z.record(z.string(), z.unknown()).optional(),
    trigger_type: z.string().min(1).max(64).optional(),
    priority: z
      .int()
      .min(-100)
      .max(100)
      .optional()
      .describe("over the workflow's priority: higher executions start first (FIFO within one, none starves)"),
  })
  .strict();

/**
 * The flow control of a code run started over HTTP (`POST /runs`), snake_case like the API; keys are expressions over
 * the run's input (`input.user_id`) or constants. See docs/flow-control.md.
 */
export const runFlowFields = {
  concurrency: runFlowSchemas.concurrency.optional(),
  priority: z.int().min(-100).max(100).optional().describe('higher runs first (-100…100, default 0)'),
  throttle: runFlowSchemas.throttle.optional(),
  debounce: runFlowSchemas.debounce.optional(),
  batch: runFlowSchemas.batch.optional(),
  budget: runFlowSchemas.budget.optional(),
};

/** `not_before` of `POST /runs`: read by `notBeforeOf`, which names the field on a bad value. */
export const notBeforeField = z
  .union([z.string().max(64), z.number()])
  .optional()
  .describe(
    "the run's first pass begins no earlier than this (status `waiting` until then): an ISO 8601 time or ms since 1970, at most 1 year ahead",
  );

const YEAR_MS = 365 * 24 * 3_600_000;
const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * `not_before` as ms since 1970: an ISO 8601 time or a whole number of ms; a bad value, or one more than a year after
 * `now`, is a ValidationError naming `not_before`. A time past is now.
 *
 * @example notBeforeOf('2030-01-01T00:00:00Z', Date.now()) // 1893456000000
 */
export function notBeforeOf(value: string | number | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const ms = typeof value === 'number' ? value : ISO.test(value.trim()) ? Date.parse(value.trim()) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0)
    throw new ValidationError(
      'not_before',
      `must be an ISO 8601 time or a whole number of ms since 1970 (got ${JSON.stringify(value)})`,
    );
  if (ms > now + YEAR_MS)
    throw new ValidationError('not_before', `must be at most 1 year ahead (got ${new Date(ms).toISOString()})`);
  return ms;
}

export const executeResponse = z.object({
  execution_id: z.string(),
  workflow_id: z.string(),
  status: z.literal('pending'),
});

const executionStatus = z.enum(['pending', 'running', 'success', 'partial_success', 'failed', 'cancelled']);
const stepStatus = z.enum(['pending', 'running', 'success', 'failed', 'skipped', 'timed_out', 'cancelled']);
const executionLink = z.object({
  execution_id: z.string(),
  from_step: z.string().optional(),
  branches: z.array(z.string()).optional(),
  timeouts_seconds: z.record(z.string(), z.number()).optional(),
  fallback: z
    .object({ rule: z.string(), attempt: z.int(), max: z.int() })
    .optional()
    .describe(
      "set when the engine started the rerun (the definition's on_failure), not a person: which of its max reruns",
    ),
});

export const executionSummary = z.object({
  workflow_id: z.string(),
  execution_id: z.string(),
  workflow_version: z.int(),
  status: executionStatus,
  trigger_type: z.string(),
  created_at: time.describe('when the execution was requested'),
  started_at: time.nullable().describe('when its first step started: null while it is queued'),
  finished_at: time.nullable(),
  error: z.string().nullable(),
});

export const executionRecord = executionSummary.extend({
  trigger_data: z.record(z.string(), z.unknown()),
  state: z.string().nullable().describe('the business state the execution last entered'),
  current_step: z.string().nullable(),
  label: z.string().nullable().describe("what the current step says it does ('Rendering PowerPoint…')"),
  progress: z.object({ done: z.int(), total: z.int() }),
  eta_seconds: z
    .number()
    .nullable()
    .describe("from the median durations of this workflow's steps; null until there is history"),
  rerun_of: executionLink.nullable(),
  reruns: z.array(executionLink),
  message: z
    .string()
    .nullable()
    .describe("what a person is told (the definition's messages): by its state, else by its failed step's error class"),
  cancel_reason: z
    .string()
    .nullable()
    .optional()
    .describe("why it was cancelled, as the first cancel request said ('cancelled' when it gave none)"),
  cancelled_by: z
    .enum(['user', 'system'])
    .nullable()
    .optional()
    .describe("who asked: 'user' (API, CLI, dashboard, operator) or 'system' (its timeout_seconds); null: never asked"),
  steps: z.array(
    z.object({
      step_id: z.string(),
      type: z.string(),
      status: stepStatus,
      parallel: z.string().optional(),
      branch: z.string().optional(),
      branches: z.record(z.string(), z.object({ status: stepStatus, error: z.string().nullable() })).optional(),
      attempts: z.int(),
      started_at: time.nullable(),
      finished_at: time.nullable(),
      duration_ms: z.number().nullable(),
      input: z.unknown(),
      output: z.unknown(),
      error: z.string().nullable(),
      message: z
        .string()
        .optional()
        .describe("a failed step: the definition's messages.errors sentence for its error class"),
      cancel: cancelRecord.optional(),
    }),
  ),
});

export const executionPage = z.object({
  executions: z.array(executionSummary),
  count: z.int(),
  last_key: z.string().nullable(),
});

/**
 * A `last_key` query value: the key of the last item of a previous page, a generated id such as
 * `ex_01JD…` (`pattern` for other keys). Anything else is a 400 naming the field, not a silently empty page.
 */
export const lastKey = (prefix: string, pattern = new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`)) =>
  z
    .string()
    .regex(
      pattern,
      `must be the last_key of a previous page (${prefix === '' ? 'a number of 16 digits' : `${prefix}_ and 26 characters`})`,
    )
    .optional();

export const pageQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    // a debounced workflow's executions are the runs of its windows (run_…)
    last_key: lastKey('ex', /^(ex|run)_[0-9A-HJKMNP-TV-Z]{26}$/),
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
  error: z.object({
    code: z.string(),
    message: z.string(),
    problems: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

export const rerunRequest = z
  .object({
    from_step: z.string().min(1).max(64).optional(),
    trigger_data: z.record(z.string(), z.unknown()).optional(),
    timeouts: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        'step id → a longer timeout for this rerun ("10m", "90s", "2h" or seconds): a poll\'s max_wait_seconds, another step\'s timeout_seconds',
      ),
  })
  .strict();

export const retryRequest = z
  .object({ branches: z.array(z.string().min(1).max(64)).min(1).max(10).optional() })
  .strict();
