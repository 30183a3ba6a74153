import { ValidationError } from '../errors.js';

/** An event's field and the value it must hold: what a wait or a cancel waits for. */
export interface EventMatch {
  /** A field of the event's detail, dotted for a nested one: `order_id`, `customer.id`. */
  path: string;
  value: unknown;
}

/**
 * How a wait names the events it takes: `'data.order_id == input.order_id'` (the event's field on one side, the
 * run's input field or a JSON literal on the other; `detail.` is a synonym of `data.`), or `{ path, value }`.
 */
export type Match = string | EventMatch;

const FIELD = /^[A-Za-z_$][\w$-]*(\.[A-Za-z_$][\w$-]*)*$/;

/**
 * The match as a field and a value, the run's input read where the expression names it. A ValidationError
 * names `path` and says what is wrong; so does an input that lacks the field (never a silent match on nothing).
 *
 * @example resolveMatch('data.order_id == input.order_id', { order_id: 42 }) // { path: 'order_id', value: 42 }
 */
export function resolveMatch(match: Match, input: unknown, path = 'match'): EventMatch {
  if (typeof match === 'object' && match !== null) {
    if (typeof match.path !== 'string' || !FIELD.test(match.path))
      throw new ValidationError(`${path}.path`, 'must be a dotted field name of the event (order_id, customer.id)');
    if (match.value === undefined || match.value === null)
      throw new ValidationError(`${path}.value`, 'is required: an event field is matched against a value');
    return { path: match.path, value: match.value };
  }
  if (typeof match !== 'string')
    throw new ValidationError(path, "must be an expression like 'data.order_id == input.order_id' or { path, value }");
  const sides = match.split('==').map((s) => s.trim());
  const event = sides.findIndex((s) => /^(data|detail)\./.test(s));
  if (sides.length !== 2 || event === -1)
    throw new ValidationError(
      path,
      `must be '<event field> == <value>', the event's field starting with data. (got ${JSON.stringify(match)})`,
    );
  const field = sides[event]!.replace(/^(data|detail)\./, '');
  if (!FIELD.test(field)) throw new ValidationError(path, `'${sides[event]}' is not a field name`);
  const other = sides[1 - event]!;
  const value = other.startsWith('input.') ? fieldOf(input, other.slice('input.'.length)) : literal(other);
  if (value === undefined || value === null)
    throw new ValidationError(path, `'${other}' is not in the run's input: a match needs a value`);
  return { path: field, value };
}

/** The value at a dotted `path` of `value`, undefined when it is not there. */
export function fieldOf(value: unknown, path: string): unknown {
  let at = value;
  for (const part of path.split('.')) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** A value as a match key holds it: a string, number or boolean by its text (42 matches "42"), else its JSON. */
export function matchKey(value: unknown): string {
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function literal(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // a bare word: a string
  }
}
