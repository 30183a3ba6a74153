import { z } from 'zod';
import { ValidationError, type Problem } from '../errors.js';
import { stepReferences, templateProblems } from './template/parse.js';

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

const transformConfig = z.union([
  z.object({ template: z.string(), output_key: z.string().min(1).max(200).default('result') }).strict(),
  z.object({ mapping: z.record(z.string(), z.unknown()) }).strict(),
]);

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
    steps: z.array(stepSchema).max(100),
  })
  .strict();

export type Definition = z.output<typeof definitionSchema>;
export type StepDefinition = Definition['steps'][number];
export type StepType = StepDefinition['type'];

/** `['steps', 1, 'config', 'url']` → `steps[1].config.url` */
export function jsonPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out === '' ? String(key) : `${out}.${String(key)}`), '');
}

/** Zod's issues as problems with JSON paths; a missing field says `required`. */
export function zodProblems(error: z.ZodError, prefix = ''): Problem[] {
  return error.issues.map((issue) => ({
    path: jsonPath([...(prefix ? [prefix] : []), ...issue.path]) || prefix || '(body)',
    message: issue.code === 'invalid_type' && /received undefined/.test(issue.message) ? 'required' : issue.message,
  }));
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
  if (!parsed.success) throw ValidationError.of(zodProblems(parsed.error));
  const problems: Problem[] = [];
  const seen = new Map<string, number>();
  parsed.data.steps.forEach((step, i) => {
    const path = `steps[${i}]`;
    if (seen.has(step.id)) problems.push({ path: `${path}.id`, message: `duplicates the id of steps[${seen.get(step.id)}] ('${step.id}')` });
    problems.push(...templateProblems(step.config, `${path}.config`));
    if (step.type === 'http_request') {
      const problem = urlProblem(step.config.url);
      if (problem !== null) problems.push({ path: `${path}.config.url`, message: problem });
    }
    for (const ref of stepReferences(step.config)) {
      if (ref === step.id) problems.push({ path: `${path}.config`, message: `refers to its own output (steps.${ref})` });
      else if (!seen.has(ref)) {
        const later = parsed.data.steps.some((s) => s.id === ref);
        problems.push({ path: `${path}.config`, message: later ? `refers to steps.${ref}, which runs later` : `refers to steps.${ref}, which does not exist` });
      }
    }
    if (!seen.has(step.id)) seen.set(step.id, i);
  });
  if (problems.length > 0) throw ValidationError.of(problems);
  return parsed.data;
}

/**
 * What is wrong with an `http_request` URL that can be told before it runs: a literal URL must be
 * absolute http(s) without credentials; a templated one (`https://{{trigger.host}}/x`) is checked at
 * run time, but a scheme written before its first `{{` must still be http or https.
 */
function urlProblem(url: string): string | null {
  const open = url.indexOf('{{');
  if (open !== -1) {
    const scheme = /^\s*([A-Za-z][A-Za-z0-9+.-]*):/.exec(url.slice(0, open))?.[1];
    return scheme === undefined || /^https?$/i.test(scheme) ? null : `the scheme ${scheme.toLowerCase()}: is not allowed (only http: and https:)`;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'must be an absolute http: or https: URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `the scheme ${parsed.protocol} is not allowed (only http: and https:)`;
  if (parsed.username !== '' || parsed.password !== '') return 'credentials in the URL are not allowed (send an Authorization header)';
  return null;
}
