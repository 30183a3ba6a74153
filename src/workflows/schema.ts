import { z } from 'zod';
import { ValidationError, type Problem } from '../errors.js';
import { secretReferences, stepReferences, templateProblems } from './template/parse.js';

/** Per-step retries; the defaults are the issue's: 3 tries, 1 s, doubling. */
export const retrySchema = z
  .object({
    max_attempts: z.int().min(1).max(20).default(3),
    backoff_seconds: z.number().min(0).max(3600).default(1),
    backoff_rate: z.number().min(1).max(10).default(2),
  })
  .strict();

const httpConfig = z
  .object({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    url: z.string().min(1),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
    timeout_seconds: z.number().positive().max(300).optional(),
  })
  .strict();

const transformConfig = z.union(
  [
    z.object({ template: z.string(), output_key: z.string().min(1).max(200).default('result') }).strict(),
    z.object({ mapping: z.record(z.string(), z.unknown()) }).strict(),
  ],
  { error: () => 'needs either `template` (a string, with an optional `output_key`) or `mapping` (an object), and not both' },
);

const logConfig = z
  .object({
    message: z.string(),
    level: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  })
  .strict();

const stepBase = {
  id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1–64 letters, digits, _ or -'),
  retry: retrySchema.optional(),
  timeout_seconds: z.number().positive().max(3600).optional(),
};

export const stepSchema = z.discriminatedUnion('type', [
  z.object({ ...stepBase, type: z.literal('http_request'), config: httpConfig }).strict(),
  z.object({ ...stepBase, type: z.literal('transform'), config: transformConfig }).strict(),
  z.object({ ...stepBase, type: z.literal('log'), config: logConfig }).strict(),
]);

export const definitionSchema = z
  .object({
    name: z.string().min(1).max(200),
    description: z.string().max(2000).optional(),
    enabled: z.boolean().default(true),
    steps: z.array(stepSchema).min(1, 'needs at least one step').max(100),
  })
  .strict();

export type Definition = z.output<typeof definitionSchema>;
export type StepDefinition = Definition['steps'][number];
export type StepType = StepDefinition['type'];

/** `['steps', 1, 'config', 'url']` → `steps[1].config.url` */
export function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out === '' ? String(key) : `${out}.${String(key)}`), '');
}

/** Zod's issues as problems with JSON paths, said plainly (no "expected record", no "Invalid discriminator value"). */
export function zodProblems(error: z.ZodError, prefix = ''): Problem[] {
  return error.issues.map((issue) => ({
    path: jsonPath([...(prefix ? [prefix] : []), ...issue.path]) || prefix || '(body)',
    message: plainMessage(issue),
  }));
}

const KINDS: Record<string, string> = { record: 'an object', object: 'an object', string: 'a string', number: 'a number', int: 'a whole number', boolean: 'true or false', array: 'a list', bigint: 'a whole number', date: 'a date' };

function plainMessage(issue: z.core.$ZodIssue): string {
  const received = /received (\w+)/.exec(issue.message)?.[1];
  const list = (values: readonly unknown[]) => values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
  switch (issue.code) {
    case 'invalid_type':
      if (received === 'undefined') return 'required';
      return `must be ${KINDS[issue.expected] ?? issue.expected}${received ? ` (got ${received === 'array' ? 'a list' : received})` : ''}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length === 1 ? '' : 's'} ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${list(issue.values)}` : `must be one of ${list(issue.values)}`;
    case 'too_small':
    case 'too_big': {
      const limit = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
      const least = issue.code === 'too_small' ? 'at least' : 'at most';
      if (issue.origin === 'string') return `must have ${least} ${limit} character${limit === 1 ? '' : 's'}`;
      if (issue.origin === 'array' || issue.origin === 'set') return issue.message.startsWith('Too') ? `must have ${least} ${limit} item${limit === 1 ? '' : 's'}` : issue.message;
      return `must be ${least} ${limit}`;
    }
    case 'invalid_union': {
      const expected = /Expected (.+)$/.exec(issue.message)?.[1];
      if ((issue as { discriminator?: string }).discriminator && expected) return `must be one of ${expected.replace(/'/g, '').split(' | ').join(', ')}`;
      return issue.message === 'Invalid input' ? 'matches none of the accepted forms' : issue.message;
    }
    case 'invalid_format':
      return `must be ${issue.format === 'datetime' ? 'an ISO 8601 date-time' : `a valid ${issue.format}`}`;
    default:
      return issue.message;
  }
}

/**
 * A workflow definition, checked: its shape (zod), then what a schema cannot say: unique step ids,
 * well-formed `{{ }}` templates, and `steps.<id>` references only to earlier steps. Every problem
 * is reported at once, each with its JSON path.
 *
 * @example parseDefinition({ name: 'hello', steps: [{ id: 'greet', type: 'log', config: { message: 'hi {{trigger.name}}' } }] })
 */
export function parseDefinition(input: unknown): Definition {
  const parsed = definitionSchema.safeParse(input);
  // the shape's problems and the templates' and references' together: fixing one never reveals another
  const problems: Problem[] = parsed.success ? [] : zodProblems(parsed.error);
  const steps = parsed.success ? parsed.data.steps : roughSteps(input);
  const seen = new Map<string, number>();
  steps.forEach((step, i) => {
    const path = `steps[${i}]`;
    if (step.id === undefined) return;
    if (seen.has(step.id)) problems.push({ path: `${path}.id`, message: `duplicates the id of steps[${seen.get(step.id)}] ('${step.id}')` });
    problems.push(...templateProblems(step.config, `${path}.config`));
    problems.push(...literalUrlProblems(step, path));
    for (const ref of stepReferences(step.config)) {
      if (ref === step.id) problems.push({ path: `${path}.config`, message: `refers to its own output (steps.${ref})` });
      else if (!seen.has(ref)) {
        const later = steps.some((s) => s.id === ref);
        problems.push({ path: `${path}.config`, message: later ? `refers to steps.${ref}, which runs later` : `refers to steps.${ref}, which does not exist` });
      }
    }
    if (!seen.has(step.id)) seen.set(step.id, i);
  });
  if (problems.length > 0 || !parsed.success) throw ValidationError.of(problems);
  return parsed.data;
}

/** An http_request's URL without `{{ }}` is known at save time: only http: and https: are ever sent. */
function literalUrlProblems(step: { type?: unknown; config: unknown }, path: string): Problem[] {
  const url = (step.config as { url?: unknown } | null)?.url;
  if (step.type !== 'http_request' || typeof url !== 'string' || url.includes('{{')) return [];
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    return [{ path: `${path}.config.url`, message: `is not a URL: '${url}'` }];
  }
  return protocol === 'http:' || protocol === 'https:' ? [] : [{ path: `${path}.config.url`, message: `must be an http:// or https:// URL (got ${protocol})` }];
}

/** The steps of a definition that failed its schema, as far as they can be read, for the other checks. */
function roughSteps(input: unknown): Array<{ id?: string; type?: unknown; config: unknown }> {
  const steps = (input as { steps?: unknown } | null)?.steps;
  if (!Array.isArray(steps)) return [];
  return steps.map((step) => {
    const s = (typeof step === 'object' && step !== null ? step : {}) as { id?: unknown; type?: unknown; config?: unknown };
    return { ...(typeof s.id === 'string' ? { id: s.id } : {}), type: s.type, config: s.config ?? null };
  });
}

/**
 * Every `{{secrets.<name>}}` of a definition that names no stored secret, each with its path.
 *
 * @example unknownSecrets(definition, new Set(['api_key'])) // [{ path: 'steps[0].config.headers.Authorization', message: "names no stored secret 'nope' (POST /secrets first)" }]
 */
export function unknownSecrets(definition: Definition, known: ReadonlySet<string>): Problem[] {
  return definition.steps.flatMap((step, i) =>
    secretReferences(step.config, `steps[${i}].config`)
      .filter((ref) => !known.has(ref.name))
      .map((ref) => ({ path: ref.path, message: `names no stored secret '${ref.name}' (store it first: POST /secrets)` })),
  );
}
