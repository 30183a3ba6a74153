// parse.ts imports FILTERS and this file imports InterpolationError back; neither is touched while
// the modules load, so the cycle is safe in either load order.
import { InterpolationError } from './parse.js';

/** A literal argument of a filter call: `default('x')`, `default(0)`. */
export type FilterArg = string | number;

/**
 * One `| name(args)` step. `arity` is checked when the template is parsed; `apply` throws
 * InterpolationError (naming `expression`) when the value has the wrong type.
 *
 * @example FILTERS.upper!.apply('hi', [], 'trigger.name | upper') // 'HI'
 */
export interface Filter {
  arity: [min: number, max: number];
  apply(value: unknown, args: FilterArg[], expression: string): unknown;
}

/**
 * The filters a template may chain with `|`. `default` is the only one that sees a missing value:
 * it replaces undefined, null and `''`. `first`/`last` of an empty array give null (so `default`
 * can follow); of an empty string, `''`.
 *
 * @example render('{{trigger.tags | join(", ") | upper}}', scope) // 'A, B'
 */
export const FILTERS: Record<string, Filter> = {
  upper: { arity: [0, 0], apply: (value, _, expression) => text(value, 'upper', expression).toUpperCase() },
  lower: { arity: [0, 0], apply: (value, _, expression) => text(value, 'lower', expression).toLowerCase() },
  trim: { arity: [0, 0], apply: (value, _, expression) => text(value, 'trim', expression).trim() },
  default: {
    arity: [1, 1],
    apply: (value, [fallback]) => (value === undefined || value === null || value === '' ? fallback : value),
  },
  json: { arity: [0, 1], apply: (value, [indent], expression) => json(value, expression, indent) },
  length: {
    arity: [0, 0],
    apply(value, _, expression) {
      if (typeof value === 'string' || Array.isArray(value)) return value.length;
      if (isRecord(value)) return Object.keys(value).length;
      return wrongType('length', 'a string, an array or an object', value, expression);
    },
  },
  first: { arity: [0, 0], apply: (value, _, expression) => end(value, 'first', expression) },
  last: { arity: [0, 0], apply: (value, _, expression) => end(value, 'last', expression) },
  join: {
    arity: [0, 1],
    apply(value, [separator = ','], expression) {
      if (!Array.isArray(value)) return wrongType('join', 'an array', value, expression);
      return value.map((item) => stringify(item, expression)).join(String(separator));
    },
  },
  number: {
    arity: [0, 0],
    apply(value, _, expression) {
      // Number('') and Number(null) are 0; a blank or absent value is not a number.
      const number =
        typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value.trim() !== '')
          ? Number(value)
          : NaN;
      if (Number.isFinite(number)) return number;
      const got = typeof value === 'string' ? 'a string that is not a finite number' : typeName(value);
      throw new InterpolationError(expression, `number expects a number or a numeric string, got ${got}`);
    },
  },
  string: { arity: [0, 0], apply: (value, _, expression) => stringify(value, expression) },
};

/**
 * How a value reads inside longer text: strings as they are, null (and undefined) as `''`,
 * objects and arrays as JSON, other scalars via String().
 *
 * @example stringify({ a: 1 }, 'trigger') // '{"a":1}'
 */
export function stringify(value: unknown, expression: string): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return json(value, expression);
  return String(value);
}

function json(value: unknown, expression: string, indent?: FilterArg): string {
  try {
    // JSON.stringify gives undefined for a function or a symbol; write null, as it does inside arrays.
    return JSON.stringify(value, null, indent) ?? 'null';
  } catch (error) {
    throw new InterpolationError(expression, `json: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function text(value: unknown, filter: string, expression: string): string {
  return typeof value === 'string' ? value : wrongType(filter, 'a string', value, expression);
}

function end(value: unknown, filter: 'first' | 'last', expression: string): unknown {
  if (typeof value === 'string') return filter === 'first' ? value.slice(0, 1) : value.slice(-1);
  if (!Array.isArray(value)) return wrongType(filter, 'an array or a string', value, expression);
  return (filter === 'first' ? value[0] : value[value.length - 1]) ?? null;
}

function wrongType(filter: string, expected: string, value: unknown, expression: string): never {
  throw new InterpolationError(expression, `${filter} expects ${expected}, got ${typeName(value)}`);
}

/** Names the type only: the value may be a secret, and error messages are journaled. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
