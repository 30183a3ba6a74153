import { z } from 'zod';
import { ConflictError, type Problem, ValidationError } from '../errors.js';
import type { Definitions, StoredWorkflow } from './definitions.js';
import type { Definition } from './schema.js';
import { type Expression, parseTemplate } from './template/parse.js';

const TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array'] as const;
type ParameterType = (typeof TYPES)[number];

/** A template's parameters by name: each filled in where the steps say `{{params.<name>}}`; one without a default is required. */
export const parametersSchema = z
  .record(
    z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be 1–64 letters, digits or _, not starting with a digit'),
    z
      .object({
        type: z.enum(TYPES),
        default: z.unknown().optional(),
        description: z.string().max(500).optional(),
      })
      .strict(),
  )
  .refine((p) => Object.keys(p).length >= 1 && Object.keys(p).length <= 50, 'needs 1 to 50 parameters');

type Parameters = z.output<typeof parametersSchema>;

/** Whether a stored workflow is a template (it has `parameters`): it is instantiated, never executed. */
export function isTemplate(wf: { parameters?: unknown }): boolean {
  return wf.parameters !== undefined;
}

/** A template cannot run: the ConflictError (409) an execute of one answers. */
export function templateConflict(wf: StoredWorkflow): ConflictError {
  return new ConflictError(
    `workflow ${wf.id} ('${wf.name}') is a template: it cannot be executed; instantiate it (POST /workflows/${wf.id}/instantiate { name, params }) and execute the workflow that makes`,
  );
}

/**
 * What a schema cannot say about parameters: `{{params.<name>}}` only in a template, only of a
 * declared parameter, written plain (no filters, no path: it is filled in as it is, before any
 * execution), and each default of its parameter's type.
 */
export function parameterProblems(definition: Definition): Problem[] {
  const problems: Problem[] = [];
  const { name: _n, description: _d, parameters, ...filled } = definition;
  for (const [name, p] of Object.entries(parameters ?? {})) {
    const bad = p.default === undefined ? null : typeProblem(p.type, p.default);
    if (bad) problems.push({ path: `parameters.${name}.default`, message: bad });
  }
  walk(filled, '', (text, at) => {
    for (const e of expressions(text)) {
      if (e.root !== 'params') continue;
      const name = e.path[0];
      if (!parameters)
        problems.push({
          path: at,
          message: `{{${e.source}}}: only a template (a workflow with parameters) has params`,
        });
      else if (e.path.length !== 1 || e.filters.length > 0)
        problems.push({
          path: at,
          message: `{{${e.source}}}: a parameter is filled in as it is: write {{params.<name>}}`,
        });
      else if (typeof name !== 'string' || !(name in parameters))
        problems.push({
          path: at,
          message: `{{${e.source}}}: no parameter '${name}' (declared: ${Object.keys(parameters).sort().join(', ')})`,
        });
    }
  });
  return problems;
}

/**
 * Workflow templates (brief 004 §15): `instantiate` stores a normal workflow made of a template with
 * its parameters filled in.
 *
 * @example
 * await templates.instantiate('wf_01J…', { name: 'report-acme', params: { customer: 'acme', pages: 3 } });
 */
export class Templates {
  constructor(private readonly definitions: Definitions) {}

  /** The new workflow (version 1); a missing required parameter, an unknown one or a wrong type → ValidationError naming it. */
  async instantiate(templateId: string, request: { name: string; params?: Record<string, unknown> }) {
    const template = await this.definitions.get(templateId);
    if (!template.parameters)
      throw new ConflictError(`workflow ${template.id} ('${template.name}') has no parameters: it is not a template`);
    const values = fill(template.parameters, request.params ?? {});
    const { id: _i, version: _v, created_at: _c, updated_at: _u, parameters: _p, name: _n, ...rest } = template;
    return this.definitions.create({ ...(substitute(rest, values) as object), name: request.name });
  }
}

/** The parameters' values: those given, checked against their types, and the defaults of the rest. */
function fill(parameters: Parameters, given: Record<string, unknown>): Record<string, unknown> {
  const problems: Problem[] = [];
  for (const name of Object.keys(given))
    if (!(name in parameters))
      problems.push({
        path: `params.${name}`,
        message: `no such parameter (declared: ${Object.keys(parameters).sort().join(', ')})`,
      });
  const values: Record<string, unknown> = {};
  // by name: PostgreSQL's jsonb keeps its own key order
  for (const [name, p] of Object.entries(parameters).sort(([a], [b]) => a.localeCompare(b))) {
    const value = name in given ? given[name] : p.default;
    if (value === undefined) {
      problems.push({
        path: `params.${name}`,
        message: `required (${p.type}${p.description ? `: ${p.description}` : ''})`,
      });
      continue;
    }
    const bad = typeProblem(p.type, value);
    if (bad) problems.push({ path: `params.${name}`, message: bad });
    values[name] = value;
  }
  if (problems.length > 0) throw ValidationError.of(problems);
  return values;
}

function typeProblem(type: ParameterType, value: unknown): string | null {
  const actual = Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
  const fits =
    type === 'integer' ? Number.isInteger(value) : type === 'number' ? Number.isFinite(value) : actual === type;
  return fits ? null : `must be ${type === 'integer' || type === 'array' ? 'an' : 'a'} ${type} (got ${actual})`;
}

/** `value` with every `{{params.<name>}}` filled in: a string that is one such template alone becomes the value itself (a number stays a number). */
function substitute(value: unknown, values: Record<string, unknown>): unknown {
  if (typeof value === 'string') {
    const parts = parsed(value);
    if (!parts?.some((p) => typeof p === 'object' && p.root === 'params')) return value;
    const only = parts.filter((p) => p !== '');
    if (only.length === 1 && typeof only[0] === 'object') return values[only[0].path[0] as string];
    return parts
      .map((p) => {
        if (typeof p === 'string') return p;
        if (p.root !== 'params') return `{{${p.source}}}`;
        const v = values[p.path[0] as string];
        return typeof v === 'string' ? v : JSON.stringify(v);
      })
      .join('');
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, values));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, values)]));
  return value;
}

function parsed(text: string): (string | Expression)[] | undefined {
  if (!text.includes('{{')) return undefined;
  try {
    return parseTemplate(text);
  } catch {
    // templateProblems reports it
    return undefined;
  }
}

function expressions(text: string): Expression[] {
  return (parsed(text) ?? []).filter((p): p is Expression => typeof p === 'object');
}

function walk(value: unknown, path: string, visit: (text: string, at: string) => void): void {
  if (typeof value === 'string') visit(value, path);
  else if (Array.isArray(value))
    value.forEach((v, i) => {
      walk(v, `${path}[${i}]`, visit);
    });
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) walk(v, path ? `${path}.${k}` : k, visit);
}
