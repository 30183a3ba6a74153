import { z } from 'zod';
import { ValidationError, type Problem } from '../errors.js';
import { checkFlow } from '../runtime/flow-check.js';
import type { FlowOptions, RateLimitUse } from '../runtime/flow.js';
import { fieldOf } from '../runtime/match.js';
import { checkLimitName } from '../runtime/rates/limits.js';
import type { Definition, StepDefinition } from './schema.js';

/**
 * Flow control of stored workflows (docs/flow-control.md): the definition's snake_case fields, checked at save time
 * by the one check of flow options (`checkFlow`), and turned into the start options of each execution.
 *
 * A key is `trigger.<field>` (the execution's trigger data, as `{{trigger.<field>}}` reads it, without braces) or a
 * constant. Every stored workflow's executions are runs of one code workflow (`runledger.stored`), so a key of scope
 * `workflow` is counted per stored workflow: the key a run falls under is prefixed with the workflow's id.
 */

const TRIGGER_KEY = /^trigger(\.[A-Za-z_$][\w$-]*)+$/;
const duration = z.union([z.string(), z.number()]);
/** The flow fields' shapes, with `key` saying what a key reads (the trigger data, or a code run's input). */
function schemas(key: z.ZodString) {
  return {
    concurrency: z
      .array(
        z
          .object({
            key: key.optional(),
            limit: z.number(),
            on_limit: z.enum(['queue', 'cancel_in_progress', 'drop_newest']).optional(),
            fair_by: key.optional(),
            scope: z.enum(['workflow', 'global']).optional(),
          })
          .strict(),
      )
      .describe('at most `limit` runs of a key in flight; the rest wait their turn (or as `on_limit` says)'),
    throttle: z
      .object({ key: key.optional(), limit: z.number(), period: duration })
      .strict()
      .describe('at most `limit` starts per `period` per key; the rest are delayed, never dropped'),
    debounce: z
      .object({
        key: key.optional(),
        period: duration,
        max_wait: duration.optional(),
        mode: z.enum(['last', 'all']).optional(),
      })
      .strict()
      .describe('one run per key after `period` with no new start, with the last input (`all`: every input)'),
    batch: z
      .object({ key: key.optional(), max_size: z.number(), timeout: duration })
      .strict()
      .describe(
        'starts of a key become one run of up to `max_size` inputs (the list), begun when full or `timeout` after the first',
      ),
    budget: z
      .object({
        tokens: z.number().optional(),
        cost: z.number().optional(),
        tool_calls: z.number().optional(),
        steps: z.number().optional(),
        wall_time: duration.optional(),
        on_exceed: z.enum(['fail', 'approve']).optional(),
      })
      .strict()
      .describe('what a run may use in all; past it, it fails or waits for approval'),
  };
}

const key = z.string().describe("'trigger.<field>' (read from the trigger data) or a constant ('openai')");
const stored = schemas(key);
export const concurrencySchema = stored.concurrency;
export const throttleSchema = stored.throttle;
export const debounceSchema = stored.debounce;
export const batchSchema = stored.batch;
export const budgetSchema = stored.budget;
/** The same fields for a code run started over HTTP: keys read its input. */
export const runFlowSchemas = schemas(
  z.string().describe("'input.<field>' (read from the run's input) or a constant ('openai')"),
);

/**
 * A step's take of a named rate limit (the steps that call out): the limit's name, its units, its key, and `charge`:
 * what the call really used, read from the step's output after it (`output.body.usage.total_tokens`), charged to the
 * limit past the units taken before it.
 */
export const rateLimitSchema = z
  .object({
    name: z.string(),
    units: z.number().optional(),
    key: key.optional(),
    charge: z
      .string()
      .optional()
      .describe("'output.<field>…': the units the call really used, read from the step's output after the call"),
  })
  .strict();

/** A `charge` as a stored step writes it: a field of the step's output. */
const CHARGE = /^output(\.[A-Za-z_$][\w$-]*)+$/;

/** The flow fields of a stored definition, as saved. */
export interface StoredFlow {
  concurrency?: z.output<typeof concurrencySchema>;
  priority?: number;
  throttle?: z.output<typeof throttleSchema>;
  debounce?: z.output<typeof debounceSchema>;
  batch?: z.output<typeof batchSchema>;
  budget?: z.output<typeof budgetSchema>;
}

const SNAKE: Record<string, string> = {
  onLimit: 'on_limit',
  fairBy: 'fair_by',
  maxWait: 'max_wait',
  maxSize: 'max_size',
  toolCalls: 'tool_calls',
  wallTime: 'wall_time',
  onExceed: 'on_exceed',
};
const snakePath = (path: string) => path.replace(/[A-Za-z]+/g, (word) => SNAKE[word] ?? word);

/** A key as a stored definition writes it; `trigger.x` reads the trigger data. */
function keyProblem(value: string | undefined, path: string): Problem | null {
  if (value === undefined || TRIGGER_KEY.test(value)) return null;
  if (value === 'trigger' || value.startsWith('trigger.') || value.startsWith('trigger['))
    return { path, message: `'${value}' is not a field of the trigger data (trigger.user_id)` };
  if (value.startsWith('input.') || value.startsWith('{{'))
    return { path, message: `a stored workflow's key reads the trigger data: write trigger.<field> (got '${value}')` };
  return null;
}

/** The definition's flow fields as FlowOptions, keys and fair_by as written (`trigger.x` → `input.x`, for the check). */
function camel(flow: StoredFlow, trigger = true): FlowOptions {
  const k = (value: string | undefined) =>
    value === undefined ? {} : { key: trigger && value.startsWith('trigger.') ? `input.${value.slice(8)}` : value };
  const out: FlowOptions = {};
  if (flow.concurrency)
    out.concurrency = flow.concurrency.map((c) => ({
      ...k(c.key),
      limit: c.limit,
      ...(c.on_limit ? { onLimit: c.on_limit } : {}),
      ...(c.fair_by ? { fairBy: k(c.fair_by).key } : {}),
      ...(c.scope ? { scope: c.scope } : {}),
    }));
  if (flow.priority !== undefined) out.priority = flow.priority;
  if (flow.throttle)
    out.throttle = { ...k(flow.throttle.key), limit: flow.throttle.limit, period: flow.throttle.period };
  if (flow.debounce) {
    const { key: _k, max_wait: maxWait, ...rest } = flow.debounce;
    out.debounce = { ...k(flow.debounce.key), ...rest, ...(maxWait === undefined ? {} : { maxWait }) };
  }
  if (flow.batch) out.batch = { ...k(flow.batch.key), maxSize: flow.batch.max_size, timeout: flow.batch.timeout };
  if (flow.budget) {
    const { tool_calls: toolCalls, wall_time: wallTime, on_exceed: onExceed, ...rest } = flow.budget;
    out.budget = {
      ...rest,
      ...(toolCalls === undefined ? {} : { toolCalls }),
      ...(wallTime === undefined ? {} : { wallTime }),
      ...(onExceed === undefined ? {} : { onExceed }),
    };
  }
  return out;
}

/**
 * The problems of a definition's flow fields (and its steps' `rate_limit`s), paths as written:
 * `concurrency[0].limit`, `debounce.max_wait`, `steps[2].rate_limit.units`.
 *
 * @example flowProblems({ concurrency: [{ limit: 0 }] }) // [{ path: 'concurrency[0].limit', message: 'must be …' }]
 */
export function flowProblems(
  flow: StoredFlow,
  rateLimits: Array<[z.output<typeof rateLimitSchema>, string]> = [],
): Problem[] {
  const problems: Problem[] = [];
  flow.concurrency?.forEach((c, i) => {
    for (const field of ['key', 'fair_by'] as const) {
      const problem = keyProblem(c[field], `concurrency[${i}].${field}`);
      if (problem) problems.push(problem);
    }
  });
  for (const field of ['throttle', 'debounce', 'batch'] as const) {
    const problem = keyProblem(flow[field]?.key, `${field}.key`);
    if (problem) problems.push(problem);
  }
  if (flow.debounce?.mode === 'all')
    problems.push({
      path: 'debounce.mode',
      message: "'all' is for code workflows: a stored execution runs with one trigger's data (use 'last')",
    });
  for (const [use, path] of rateLimits) {
    try {
      checkLimitName(use.name, `${path}.name`);
    } catch (error) {
      if (error instanceof ValidationError) problems.push(...error.problems);
      else throw error;
    }
    const problem = keyProblem(use.key, `${path}.key`);
    if (problem) problems.push(problem);
    if (use.units !== undefined && !(Number.isFinite(use.units) && use.units > 0))
      problems.push({ path: `${path}.units`, message: `must be a positive number (got ${use.units})` });
    if (use.charge !== undefined && !CHARGE.test(use.charge))
      problems.push({
        path: `${path}.charge`,
        message: `must name a field of the step's output, as 'output.body.usage.total_tokens' (got '${use.charge}')`,
      });
  }
  if (problems.length > 0) return problems;
  try {
    checkFlow(camel(flow));
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.problems.map((p) => ({ path: snakePath(p.path), message: p.message }));
  }
  return [];
}

/**
 * The flow options of a code run started over HTTP (`POST /runs`), given in the API's snake_case with keys over the
 * run's input (`input.user_id`), checked; a ValidationError names the field as it was sent (`concurrency[0].fair_by`).
 *
 * @example checkRunFlow({ concurrency: [{ key: 'input.user', limit: 1, on_limit: 'drop_newest' }] })
 * // { concurrency: [{ key: 'input.user', limit: 1, onLimit: 'drop_newest' }] }
 */
export function checkRunFlow(flow: StoredFlow): FlowOptions {
  try {
    return checkFlow(camel(flow, false));
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw ValidationError.of(error.problems.map((p) => ({ path: snakePath(p.path), message: p.message })));
  }
}

/**
 * The start options of an execution: the definition's flow, `priority` replaced by the request's, each key resolved
 * from the trigger data into `keys` (which the run's input carries as `flow_keys`) and named as `input.flow_keys.<n>`.
 * A key of scope `workflow` is prefixed with the workflow's id. Trigger data without a key's field is refused.
 *
 * @example executionFlow({ concurrency: [{ key: 'trigger.user', limit: 1 }] }, 'wf_1', { user: 'ada' })
 * // { options: { concurrency: [{ key: 'input.flow_keys.c0', limit: 1 }] }, keys: { c0: 'wf_1:ada' } }
 */
export function executionFlow(
  flow: StoredFlow,
  workflowId: string,
  trigger: Record<string, unknown>,
  priority?: number,
): { options: FlowOptions; keys: Record<string, string> } {
  const keys: Record<string, string> = {};
  const keyOf = (name: string, value: string | undefined, path: string, global = false) => {
    const resolved = value === undefined ? undefined : triggerValue(value, trigger, path);
    keys[name] = global && resolved !== undefined ? resolved : [workflowId, resolved].filter(Boolean).join(':');
    return `input.flow_keys.${name}`;
  };
  const options = camel(flow);
  options.concurrency = options.concurrency?.map((c, i) => {
    const stored = flow.concurrency![i]!;
    const fairBy = stored.fair_by?.startsWith('trigger.') ? `input.trigger_data.${stored.fair_by.slice(8)}` : c.fairBy;
    return {
      ...c,
      key: keyOf(`c${i}`, stored.key, `concurrency[${i}].key`, stored.scope === 'global'),
      ...(fairBy ? { fairBy } : {}),
    };
  });
  if (options.concurrency === undefined) delete options.concurrency;
  if (options.throttle) options.throttle.key = keyOf('throttle', flow.throttle!.key, 'throttle.key');
  if (options.debounce) options.debounce.key = keyOf('debounce', flow.debounce!.key, 'debounce.key');
  // a batch's run is one execution: its trigger data is the list of its starts'
  if (options.batch)
    Object.assign(options.batch, { key: keyOf('batch', flow.batch!.key, 'batch.key'), into: 'trigger_data' });
  if (priority !== undefined) options.priority = priority;
  return { options, keys };
}

/**
 * A step's rate limits as the runtime takes them: `trigger.x` read from the run's input (its `trigger_data`); `charge`
 * reads the output's field (a field that is not a number charges nothing past the units taken).
 */
export function stepRateLimit(use: Omit<StoredRateLimit, 'charge'> & { charge?: string }): RateLimitUse {
  const charge = use.charge?.slice('output.'.length);
  return {
    name: use.name,
    ...(use.units === undefined ? {} : { units: use.units }),
    ...(charge === undefined ? {} : { charge: (output: unknown) => Number(fieldOf(output, charge)) }),
    ...(use.key === undefined
      ? {}
      : { key: use.key.startsWith('trigger.') ? `input.trigger_data.${use.key.slice(8)}` : use.key }),
  };
}

type StoredRateLimit = z.output<typeof rateLimitSchema>;

/** A stored step's `rate_limit` (one or a list) as the step option takes it (`stepRateLimit` each). */
export function rateLimitOf(step: {
  rate_limit?: Omit<StoredRateLimit, 'charge'> | Array<Omit<StoredRateLimit, 'charge'>>;
}): {
  rateLimit?: RateLimitUse[];
} {
  return step.rate_limit ? { rateLimit: [step.rate_limit].flat().map(stepRateLimit) } : {};
}

/** The text of a key: a constant as written, or the trigger data's field (refused when missing). */
function triggerValue(key: string, trigger: Record<string, unknown>, path: string): string {
  if (!key.startsWith('trigger.')) return key;
  const value = fieldOf(trigger, key.slice('trigger.'.length));
  if (value === undefined || value === null || value === '')
    throw new ValidationError(path, `'${key}' is not in the trigger data: the execution has no key to count it under`);
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Every `rate_limit` of the definition's steps (in branches and maps too), by its JSON path. */
export function definitionRateLimits(definition: Definition): Array<[z.output<typeof rateLimitSchema>, string]> {
  const out: Array<[z.output<typeof rateLimitSchema>, string]> = [];
  const visit = (step: StepDefinition, path: string): void => {
    if (step.type === 'parallel')
      for (const [branch, steps] of Object.entries(step.config.branches))
        for (const [j, s] of steps.entries()) visit(s, `${path}.config.branches.${branch}[${j}]`);
    if (step.type === 'map') for (const [j, s] of step.config.steps.entries()) visit(s, `${path}.config.steps[${j}]`);
    if (!('rate_limit' in step) || step.rate_limit === undefined) return;
    if (!Array.isArray(step.rate_limit)) out.push([step.rate_limit, `${path}.rate_limit`]);
    else for (const [i, use] of step.rate_limit.entries()) out.push([use, `${path}.rate_limit[${i}]`]);
  };
  for (const [i, step] of definition.steps.entries()) visit(step, `steps[${i}]`);
  return out;
}
