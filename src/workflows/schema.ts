import { z } from 'zod';
import { ValidationError, type Problem } from '../errors.js';
import { zodProblems } from '../problems.js';
import { fallbackProblems, onFailureSchema } from './fallback.js';
import {
  budgetSchema,
  concurrencySchema,
  debounceSchema,
  batchSchema,
  definitionRateLimits,
  flowProblems,
  rateLimitSchema,
  throttleSchema,
} from './flow.js';
import { messageProblems, messagesSchema } from './messages.js';
import { unknownSecrets } from './secret-references.js';
import { parameterProblems, parametersSchema } from './templates.js';
import {
  callbackConfig,
  cancelOnSchema,
  conditionSchema,
  errorRuleSchema,
  functionConfig,
  guardTemplate,
  httpConfig,
  logConfig,
  mapFields,
  pollCancel,
  pollConfig,
  sleepConfig,
  stateName,
  transformConfig,
  waitForEventConfig,
  workflowConfig,
} from './steps/configs.js';
import { generateProblems, generateConfig } from './steps/generate-config.js';
import { guardProblems } from './steps/guard.js';
import { ITEM_STEPS, itemTemplates, plainItems } from './steps/item.js';
import { stepReferences, templateProblems, usesRoot } from './template/parse.js';
import { httpEffectSchema } from './steps/http-effect-config.js';
import { urlProblem } from './template/url.js';
import { ttlSchema } from './ttl.js';

/** Per-step retries; the defaults are the issue's: 3 tries, 1 s, doubling. */
export const retrySchema = z
  .object({
    max_attempts: z.int().min(1).max(20).default(3),
    backoff_seconds: z.number().min(0).max(3600).default(1),
    backoff_rate: z.number().min(1).max(10).default(2),
  })
  .strict();

const stepBase = {
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1–64 letters, digits, _ or -'),
  retry: retrySchema.optional(),
  timeout_seconds: z.number().positive().max(3600).optional(),
  /** What a person watching the execution reads while the step runs. */
  label: z.string().min(1).max(200).optional(),
  /** The state the execution enters when the step starts, and when it has succeeded. */
  state: stateName.optional(),
  state_after: stateName.optional(),
  /** Failure states by error class; the first rule that matches wins. */
  on_error: z.array(errorRuleSchema).max(20).optional(),
  /** Undoes the step (an http_request) when a later step fails or the execution is cancelled; 404, 409 and 410 count as done. `when` / `unless`: templates read as it would run (see steps/guard.ts). */
  compensate: httpConfig.extend({ when: guardTemplate.optional(), unless: guardTemplate.optional() }).optional(),
};

const rateLimitField = z.union([rateLimitSchema, z.array(rateLimitSchema).min(1).max(5)]).optional();
// taken as the step starts, before its output exists: no `charge`
const startRateLimit = rateLimitSchema.omit({ charge: true }).strict();
const startRateLimitField = z.union([startRateLimit, z.array(startRateLimit).min(1).max(5)]).optional();
const pollFields = { config: pollConfig, cancel: pollCancel.optional(), rate_limit: rateLimitField };

const leafSchemas = [
  /** `rate_limit`: named limits (`/limits`) the request takes before it is sent; it waits durably for a slot. */
  /** `effect`: its intent journaled, an unknown outcome settled by a GET or a person (steps/http-effect-config.ts). */
  z
    .object({
      ...stepBase,
      type: z.literal('http_request'),
      config: httpConfig,
      rate_limit: rateLimitField,
      effect: httpEffectSchema.optional(),
    })
    .strict(),
  z.object({ ...stepBase, type: z.literal('transform'), config: transformConfig }).strict(),
  z.object({ ...stepBase, type: z.literal('log'), config: logConfig }).strict(),
  /** `cancel`: the service's cancel endpoint, called when the execution is cancelled while the poll waits, or after it timed out; its `until` (a poll's config) polls the service after it until it confirms (§8.1). `rate_limit`: taken before each request (`charge` reads each request's answer). */
  z.object({ ...stepBase, type: z.literal('poll'), ...pollFields }).strict(),
  /** `rate_limit`: taken before its request is sent (`charge` reads the request's answer). */
  z
    .object({ ...stepBase, type: z.literal('wait_for_callback'), config: callbackConfig, rate_limit: rateLimitField })
    .strict(),
  /** A run of a registered function (docs/protocol.md, "Durable functions") as a child: its output is the step's. `rate_limit`: taken before it starts. */
  z
    .object({ ...stepBase, type: z.literal('function'), config: functionConfig, rate_limit: startRateLimitField })
    .strict(),
  z.object({ ...stepBase, type: z.literal('sleep'), config: sleepConfig }).strict(),
  z.object({ ...stepBase, type: z.literal('wait_for_event'), config: waitForEventConfig }).strict(),
  /** A child run: a stored workflow's execution or a code workflow's run; its output is the step's. */
  z.object({ ...stepBase, type: z.literal('workflow'), config: workflowConfig }).strict(),
  /** A model call (`ctx.generate`): its answer streams into the journal; the output is `{ text, finish_reason, usage }`. */
  z.object({ ...stepBase, type: z.literal('generate'), config: generateConfig }).strict(),
] as const;

export const leafStepSchema = z.discriminatedUnion('type', [...leafSchemas]);

const parallelConfig = z
  .object({
    branches: z
      .record(
        z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a branch name is 1–64 letters, digits, _ or -'),
        z.array(leafStepSchema).min(1).max(50),
      )
      .refine((b) => Object.keys(b).length >= 1 && Object.keys(b).length <= 10, { message: 'needs 1 to 10 branches' }),
  })
  .strict();

/** Each item of `items` runs `steps` (in a branch of its own), at most `concurrency` items at once (steps/map.ts). */
const mapConfig = z
  .object({ ...mapFields, steps: z.array(leafStepSchema).min(1).max(50) })
  .strict()
  .refine((c) => c.tolerated_failures === undefined || c.tolerated_failure_percent === undefined, {
    message: 'use tolerated_failures or tolerated_failure_percent, not both',
    path: ['tolerated_failure_percent'],
  });

export const stepSchema = z.discriminatedUnion('type', [
  ...leafSchemas,
  z.object({ ...stepBase, type: z.literal('parallel'), config: parallelConfig }).strict(),
  z.object({ ...stepBase, type: z.literal('map'), config: mapConfig }).strict(),
]);

/** The states a workflow names, and the ones entered at its start and end. */
export const statesSchema = z
  .object({
    names: z.array(stateName).min(1).max(100),
    initial: stateName.optional(),
    success: stateName.optional(),
    partial: stateName.optional(),
    failed: stateName.optional(),
    cancelled: stateName.optional(),
    /** Failure states an execution can be rerun or retried from: failing in one keeps what it made (no compensation). */
    retryable: z.array(stateName).max(100).optional(),
  })
  .strict();

export const definitionSchema = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).optional(),
    enabled: z.boolean().default(true),
    /** The whole execution: past it, the engine cancels it (`cancelled_by: 'system'`, `states.cancelled`) and compensates. */
    timeout_seconds: z
      .number()
      .positive()
      .max(30 * 24 * 3600)
      .optional(),
    ttl: ttlSchema.optional(),
    states: statesSchema.optional(),
    on_error: z.array(errorRuleSchema).max(20).optional(),
    on_failure: onFailureSchema.optional(),
    /** Business events (`POST /events`) that cancel an execution: `[{ event, match: 'data.order_id == {{trigger.id}}' }]`. */
    cancel_on: cancelOnSchema.optional(),
    messages: messagesSchema.optional(),
    /** Flow control (docs/flow-control.md): keys read the trigger data (`trigger.user_id`) or are constants. */
    concurrency: concurrencySchema.optional(),
    /** Higher executions start first (-100…100, default 0); `POST /workflows/{id}/execute` may give its own. */
    priority: z.number().optional(),
    throttle: throttleSchema.optional(),
    debounce: debounceSchema.optional(),
    /** Executions of a key become one of up to `max_size`, its trigger data the list of theirs. */
    batch: batchSchema.optional(),
    budget: budgetSchema.optional(),
    /** A template's parameters (`{{params.<name>}}` in its steps): it is instantiated, never executed. */
    parameters: parametersSchema.optional(),
    steps: z.array(stepSchema).min(1, 'needs at least one step').max(100),
  })
  .strict();

export type Definition = z.output<typeof definitionSchema>;
export type StepDefinition = Definition['steps'][number];
export type LeafStep = Exclude<StepDefinition, { type: 'parallel' | 'map' }>;
export type MapStep = Extract<StepDefinition, { type: 'map' }>;
export type StepType = StepDefinition['type'];
export type Condition = z.output<typeof conditionSchema>;
export { conditionSchema, errorRuleSchema };
export type ErrorRule = z.output<typeof errorRuleSchema>;

/**
 * A workflow definition, checked: its shape (zod), then what a schema cannot say: unique step ids,
 * well-formed `{{ }}` templates, `steps.<id>` references only to earlier steps and, given `secrets`
 * (the stored secrets' names), `{{secrets.<name>}}` only of those. Every problem is reported at
 * once, each with its JSON path: a shape problem in one step does not hide a template or a secret
 * problem in another (as far as the steps can be read).
 *
 * @example parseDefinition({ name: 'hello', steps: [{ id: 'greet', type: 'log', config: { message: 'hi {{trigger.name}}' } }] }, { secrets: new Set(['api_key']) })
 */
export function parseDefinition(input: unknown, options: { secrets?: ReadonlySet<string> } = {}): Definition {
  const parsed = definitionSchema.safeParse(input);
  const secrets = options.secrets ? unknownSecrets(input, options.secrets) : [];
  // the shape's problems, the templates' and references' and the secrets' together: fixing one never reveals another
  if (!parsed.success)
    throw ValidationError.of([...zodProblems(parsed.error), ...roughProblems(roughSteps(input)), ...secrets]);
  const definition = parsed.data;
  const problems: Problem[] = [];
  const seen = new Map<string, string>();
  const check = (step: StepDefinition, path: string, visible: Set<string>) => {
    if (seen.has(step.id))
      problems.push({ path: `${path}.id`, message: `duplicates the id of ${seen.get(step.id)} ('${step.id}')` });
    const { config } = step;
    // a parallel step's config is its branches: their steps are checked one by one
    const templated: [unknown, string][] =
      step.type === 'parallel' ? [] : [[step.type === 'map' ? { items: step.config.items } : config, `${path}.config`]];
    if (step.compensate) {
      const { when, unless, ...request } = step.compensate;
      templated.push([request, `${path}.compensate`]);
      problems.push(...guardProblems({ when, unless }, `${path}.compensate`, definition));
    }
    if (step.type === 'poll' && step.cancel) templated.push([step.cancel, `${path}.cancel`]);
    for (const [request, at] of requests(step, path)) {
      const problem = urlProblem(request.url);
      if (problem !== null) problems.push({ path: `${at}.url`, message: problem });
    }
    for (const [value, at] of templated) {
      problems.push(...templateProblems(value, at).map(outsideMap));
      const callbackAllowed = step.type === 'wait_for_callback' && at === `${path}.config`;
      if (!callbackAllowed && usesRoot(value, 'callback'))
        problems.push({ path: at, message: '{{callback.…}} exists only in the request of a wait_for_callback step' });
      if (at !== `${path}.compensate` && usesRoot(value, 'cancel'))
        problems.push({
          path: at,
          message: '{{cancel.…}} exists only in a compensation (its request, when and unless)',
        });
      for (const ref of stepReferences(value)) {
        // a step's own output is there for its compensation and cancel, not for its config
        if ((ref === step.id && at !== `${path}.config`) || ITEM_STEPS.has(ref)) continue;
        if (ref === step.id) problems.push({ path: at, message: `refers to its own output (steps.${ref})` });
        else if (!visible.has(ref)) problems.push({ path: at, message: where(definition, ref) });
      }
    }
    if (step.type === 'parallel' || step.type === 'map') {
      for (const field of ['compensate', 'retry', 'timeout_seconds'] as const) {
        if (step[field] !== undefined)
          problems.push({
            path: `${path}.${field}`,
            message: `a ${step.type} step has none of its own: set it on the steps ${step.type === 'map' ? 'it runs' : 'of its branches'}`,
          });
      }
    }
    if (step.type === 'generate') problems.push(...generateProblems(step, path, options.secrets));
    if (step.type === 'wait_for_callback' && step.timeout_seconds === undefined)
      problems.push({ path: `${path}.timeout_seconds`, message: 'required: the callback URL expires with it' });
    for (const [field, state] of [
      ['state', step.state],
      ['state_after', step.state_after],
    ] as const)
      checkState(definition, state, `${path}.${field}`, problems);
    step.on_error?.forEach((rule, i) => {
      checkState(definition, rule.state, `${path}.on_error[${i}].state`, problems);
    });
    if (!seen.has(step.id)) seen.set(step.id, path);
  };
  const visible = new Set<string>();
  definition.steps.forEach((step, i) => {
    const path = `steps[${i}]`;
    check(step, path, visible);
    if (step.type === 'parallel') {
      for (const [branch, steps] of Object.entries(step.config.branches)) {
        // a branch sees the steps before the parallel step and its own earlier steps, not its siblings'
        const inBranch = new Set(visible);
        steps.forEach((inner, j) => {
          check(inner, `${path}.config.branches.${branch}[${j}]`, inBranch);
          inBranch.add(inner.id);
        });
      }
      for (const steps of Object.values(step.config.branches)) for (const inner of steps) visible.add(inner.id);
    }
    if (step.type === 'map') {
      // an item's steps see the steps before the map and its own earlier steps; `{{item}}` and `{{index}}` are theirs
      const inMap = new Set(visible);
      const from = problems.length;
      step.config.steps.forEach((inner, j) => {
        check(itemTemplates(inner), `${path}.config.steps[${j}]`, inMap);
        inMap.add(inner.id);
      });
      for (const problem of problems.slice(from)) problem.message = plainItems(problem.message);
    }
    visible.add(step.id);
  });
  if (definition.states) {
    for (const field of ['initial', 'success', 'partial', 'failed', 'cancelled'] as const)
      checkState(definition, definition.states[field], `states.${field}`, problems);
    definition.states.retryable?.forEach((state, i) => {
      checkState(definition, state, `states.retryable[${i}]`, problems);
    });
  }
  definition.on_error?.forEach((rule, i) => {
    checkState(definition, rule.state, `on_error[${i}].state`, problems);
  });
  problems.push(...fallbackProblems(definition), ...messageProblems(definition), ...secrets);
  problems.push(...parameterProblems(definition));
  problems.push(...flowProblems(definition, definitionRateLimits(definition)));
  if (problems.length > 0) throw ValidationError.of(problems);
  return definition;
}

/** The requests a step sends, by their JSON paths: its own, its callback registration, its compensation and cancel. */
function requests(step: StepDefinition, path: string): [{ url: string }, string][] {
  const out: [{ url: string }, string][] = [];
  if (step.type === 'http_request' || step.type === 'poll') out.push([step.config, `${path}.config`]);
  if (step.type === 'wait_for_callback' && step.config.request)
    out.push([step.config.request, `${path}.config.request`]);
  if (step.compensate) out.push([step.compensate, `${path}.compensate`]);
  if (step.type === 'http_request' && step.effect?.reconcile)
    out.push([step.effect.reconcile, `${path}.effect.reconcile`]);
  if (step.type === 'poll' && step.cancel) out.push([step.cancel, `${path}.cancel`]);
  if (step.type === 'poll' && step.cancel?.until) out.push([step.cancel.until, `${path}.cancel.until`]);
  return out;
}

function where(definition: Definition, ref: string): string {
  const all = definition.steps.flatMap((s): StepDefinition[] =>
    s.type === 'parallel'
      ? [s, ...Object.values(s.config.branches).flat()]
      : s.type === 'map'
        ? [s, ...s.config.steps]
        : [s],
  );
  if (!all.some((s) => s.id === ref)) return `refers to steps.${ref}, which does not exist`;
  if (definition.steps.some((s) => s.type === 'map' && s.config.steps.some((inner) => inner.id === ref)))
    return `refers to steps.${ref}, a step of a map: only the later steps of its item read it (after the map, read the map's output)`;
  return `refers to steps.${ref}, which runs later or in another branch`;
}

/** `{{item}}` outside a map's steps (inside, they are rewritten before this check): said as what it is. */
function outsideMap(problem: Problem): Problem {
  const root = /unknown root '(item|index)'/.exec(problem.message)?.[1];
  return root ? { ...problem, message: `{{${root}}} exists only in the steps of a map` } : problem;
}

/** A state a step or rule names must be one of the workflow's `states.names`. */
function checkState(definition: Definition, state: string | undefined, path: string, problems: Problem[]): void {
  if (state === undefined) return;
  if (!definition.states)
    problems.push({ path, message: `names state '${state}', but the workflow declares no states (add states.names)` });
  else if (!definition.states.names.includes(state))
    problems.push({ path, message: `'${state}' is not one of states.names (${definition.states.names.join(', ')})` });
}

/**
 * The template, URL and reference problems of a definition whose shape is wrong, as far as its
 * steps can be read: reported with the shape's problems, so fixing those reveals nothing new.
 */
function roughProblems(steps: Array<{ id?: string; type?: unknown; config: unknown }>): Problem[] {
  const problems: Problem[] = [];
  const seen = new Set<string>();
  steps.forEach((step, i) => {
    const path = `steps[${i}]`;
    problems.push(...templateProblems(step.config, `${path}.config`));
    const url = (step.config as { url?: unknown } | null)?.url;
    if ((step.type === 'http_request' || step.type === 'poll') && typeof url === 'string') {
      const problem = urlProblem(url);
      if (problem !== null) problems.push({ path: `${path}.config.url`, message: problem });
    }
    for (const ref of stepReferences(step.config)) {
      if (ITEM_STEPS.has(ref)) continue;
      if (ref === step.id)
        problems.push({ path: `${path}.config`, message: `refers to its own output (steps.${ref})` });
      else if (!seen.has(ref))
        problems.push({
          path: `${path}.config`,
          message: steps.some((s) => s.id === ref)
            ? `refers to steps.${ref}, which runs later`
            : `refers to steps.${ref}, which does not exist`,
        });
    }
    if (step.id !== undefined) seen.add(step.id);
  });
  return problems;
}

/** The steps of a definition that failed its schema, as far as they can be read, for the other checks. */
function roughSteps(input: unknown): Array<{ id?: string; type?: unknown; config: unknown }> {
  const steps = (input as { steps?: unknown } | null)?.steps;
  if (!Array.isArray(steps)) return [];
  return steps.map((step) => {
    const s = (typeof step === 'object' && step !== null ? step : {}) as {
      id?: unknown;
      type?: unknown;
      config?: unknown;
    };
    // a map's steps are checked only once its shape is right: its items are read here
    const config = s.type === 'map' ? { items: (s.config as { items?: unknown } | null)?.items } : s.config;
    return { ...(typeof s.id === 'string' ? { id: s.id } : {}), type: s.type, config: config ?? null };
  });
}
