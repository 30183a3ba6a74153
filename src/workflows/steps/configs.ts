import { z } from 'zod';
import { toMs } from '../../duration.js';

export const httpConfig = z
  .object({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    url: z.string().min(1),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
    timeout_seconds: z.number().positive().max(300).optional(),
  })
  .strict();

/** A compensation's condition: templates only, so it always reads the execution (a constant would be a config that never changes). */
export const guardTemplate = z
  .string()
  .regex(/\{\{[\s\S]*\}\}/, 'must be a template such as "{{ steps.a.output.id }}"');

export const transformConfig = z.union(
  [
    z.object({ template: z.string(), output_key: z.string().min(1).max(200).default('result') }).strict(),
    z.object({ mapping: z.record(z.string(), z.unknown()) }).strict(),
  ],
  {
    error: () =>
      'needs either `template` (a string, with an optional `output_key`) or `mapping` (an object), and not both',
  },
);

export const logConfig = z
  .object({
    message: z.string(),
    level: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  })
  .strict();

/** A business state's name (`LAYOUT_QUEUED`). */
export const stateName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'must be 1–64 letters, digits or _, starting with a letter');

/** A JSON path into a response (`body.status`, `body.jobs[0].state`) and what must hold there: exactly one of equals, in, exists. */
export const conditionSchema = z
  .object({
    path: z
      .string()
      .regex(
        /^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*$/,
        "must be a path like 'body.status' or 'body.items[0].state'",
      ),
    equals: z.unknown().optional(),
    in: z.array(z.unknown()).min(1).max(100).optional(),
    exists: z.boolean().optional(),
  })
  .strict()
  .refine((c) => [c.equals, c.in, c.exists].filter((v) => v !== undefined).length === 1, {
    message: 'needs exactly one of equals, in or exists',
  });

/** An error class mapped to the failure state the execution enters: an HTTP status (`422`, `'4xx'`, `[500, 599]`), a timeout, or any error. */
export const errorRuleSchema = z
  .object({
    status: z
      .union([
        z.int().min(100).max(599),
        z.enum(['4xx', '5xx']),
        z.tuple([z.int().min(100).max(599), z.int().min(100).max(599)]),
      ])
      .optional(),
    timed_out: z.literal(true).optional(),
    state: stateName,
  })
  .strict()
  .refine((r) => !(r.status !== undefined && r.timed_out), { message: 'use status or timed_out, not both' });

export const pollConfig = z
  .object({
    method: z.enum(['GET', 'POST']).default('GET'),
    url: z.string().min(1),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
    timeout_seconds: z.number().positive().max(300).optional(),
    until: conditionSchema,
    fail_when: conditionSchema.optional(),
    initial_delay_seconds: z.number().min(0).max(3600).default(0.5),
    interval_seconds: z.number().positive().max(3600).default(1),
    factor: z.number().min(1).max(10).default(1.5),
    max_interval_seconds: z.number().positive().max(3600).default(5),
    max_wait_seconds: z
      .number()
      .positive()
      .max(7 * 24 * 3600)
      .default(60),
  })
  .strict();

export const callbackConfig = z.object({ request: httpConfig.optional() }).strict();
export const pollCancel = httpConfig.extend({ until: pollConfig.optional() });

export const functionConfig = z
  .object({
    function: z
      .string()
      .regex(/^[A-Za-z][A-Za-z0-9._-]{0,63}$/, "a function's name: 1–64 letters, digits, '.', '_' or '-'"),
    input: z.unknown().optional(),
  })
  .strict();

/** Whether `value` holds a `{{ }}` template: then it is checked when the step runs, not when it is saved. */
const templated = (value: unknown): boolean => typeof value === 'string' && value.includes('{{');

/** Why `value` is not a duration (`'10m'`, `'1.5h'`, ms), or null when it is one. */
export function durationProblem(value: unknown): string | null {
  try {
    toMs(value as number | string);
    return null;
  } catch (error) {
    return (error as Error).message.replace(/^duration: /, '');
  }
}

/** Why `value` is not an instant (an ISO 8601 time, or ms since the epoch), or null when it is one. */
export function instantProblem(value: unknown): string | null {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return null;
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(Date.parse(value))) return null;
  return `must be an ISO 8601 time such as '2030-01-31T09:00:00Z' (got ${JSON.stringify(value)})`;
}

const duration = z.union([z.number(), z.string()]).superRefine((value, ctx) => {
  const problem = templated(value) ? null : durationProblem(value);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});

const staticDuration = z.union([z.number(), z.string()]).superRefine((value, ctx) => {
  const problem = durationProblem(value);
  if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
});

/** `sleep`: a duration (`'10m'`, ms) or an instant (`until`), either of which may be a template. */
export const sleepConfig = z.union(
  [
    z.object({ duration }).strict(),
    z
      .object({ until: z.union([z.string(), z.number()]) })
      .strict()
      .superRefine((config, ctx) => {
        const problem = templated(config.until) ? null : instantProblem(config.until);
        if (problem !== null) ctx.addIssue({ code: 'custom', path: ['until'], message: problem });
      }),
  ],
  { error: () => 'needs either `duration` (like "10m", or ms) or `until` (an ISO time or a template), not both' },
);

/** What a `wait_for_event` step's `match` says: the event's `data.<path>` must equal `value` (its text, rendered when run). */
export interface MatchExpression {
  path: string;
  value: string;
}

const MATCH = /^\s*data\.([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)\s*==\s*(\S[\s\S]*?)\s*$/;

/**
 * `data.order_id == {{trigger.order_id}}` read as its path and the text of its value; throws a message when it does not parse.
 *
 * @example parseMatch('data.order_id == 42') // { path: 'order_id', value: '42' }
 */
export function parseMatch(text: string): MatchExpression {
  const found = MATCH.exec(text);
  if (!found)
    throw new Error(
      `must read 'data.<field> == <value>', the value JSON (42, "a"), a bare word or a template (got ${JSON.stringify(text)})`,
    );
  return { path: found[1]!, value: found[2]! };
}

/**
 * The value a match's text stands for, once its templates are rendered by `render`: a lone template keeps the
 * rendered value's type, quoted text is a string (its templates inserted), JSON is its value, anything else a string.
 */
export function matchValue(text: string, render: (template: string) => unknown): unknown {
  const lone = /^\{\{[\s\S]*\}\}$/.test(text) && text.indexOf('{{', 2) === -1;
  if (lone) return render(text);
  if (text.includes('{{')) {
    const quoted = /^"([\s\S]*)"$/.exec(text);
    return String(render(quoted ? quoted[1]! : text));
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const eventType = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/, "an event type such as 'payment.received': letters, digits, . _ : -");

const matchText = z
  .string()
  .max(1000)
  .superRefine((text, ctx) => {
    try {
      parseMatch(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
  });

/** A definition's `cancel_on`: business events that cancel an execution, `match` rendered with its trigger data. */
export const cancelOnSchema = z.array(z.object({ event: eventType, match: matchText.optional() }).strict()).max(10);

export const waitForEventConfig = z
  .object({
    event: eventType,
    match: matchText.optional(),
    timeout: staticDuration.optional(),
    lookback: staticDuration.optional(),
    /** At the timeout the output is null, or with `fail` the step fails. */
    on_timeout: z.literal('fail').optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    // the runtime's limits (runtime/pass/waits.ts): a look-back is for a wait by correlation, at most a day
    if (config.lookback === undefined) return;
    if (config.match === undefined)
      ctx.addIssue({ code: 'custom', path: ['lookback'], message: 'is for a wait with a match' });
    else if (durationProblem(config.lookback) === null && toMs(config.lookback) > 86_400_000)
      ctx.addIssue({ code: 'custom', path: ['lookback'], message: 'must be at most 24h' });
  });

export const workflowConfig = z
  .object({
    /** A stored workflow's id or name, or `code:<name>` for a registered code workflow. */
    workflow: z.string().min(1).max(200),
    input: z.unknown().optional(),
  })
  .strict();

/** The most items one `map` step runs: each is a branch of the run's journal. */
export const MAX_ITEMS = 1000;

/** The map config apart from its steps (schema.ts adds those: they are the leaf steps it defines). */
export const mapFields = {
  /** A list, or a template giving one (`{{trigger.documents}}`). */
  items: z.union([
    z.string().regex(/\{\{[\s\S]*\}\}/, 'must be a list or a template giving one'),
    z.array(z.unknown()),
  ]),
  concurrency: z.int().min(1).max(100).default(10),
  tolerated_failures: z.int().min(0).max(MAX_ITEMS).optional(),
  tolerated_failure_percent: z.number().min(0).max(100).optional(),
};
