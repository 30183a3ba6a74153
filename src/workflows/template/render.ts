import { FILTERS, stringify } from './filters.js';
import { type Expression, InterpolationError, joinPath, parseTemplate } from './parse.js';

/** What a stored workflow's templates can read: `{{trigger.…}}`, `{{steps.<id>.output.…}}`, and so on. */
export interface Scope {
  trigger: unknown;
  steps: Record<string, { output: unknown }>;
  secrets: Record<string, string>;
  execution: { id: string };
  workflow: { id: string };
  /** In a `wait_for_callback` step's request: the one-time URL the service POSTs to. */
  callback?: { url: string };
  /** In a compensation: the execution's cancel request (`requested`, `reason`, `by`, `delete_artifacts`). */
  cancel?: { requested: boolean; reason: string | null; by: 'user' | 'system' | null; delete_artifacts: boolean };
}

/**
 * Derived strings shorter than this are not tracked as secret: `{{secrets.k | first}}` is one
 * character, and masking every occurrence of one character (or of `'abc'`) in every output would
 * destroy the output while hiding nothing worth hiding. A secret's own value is hidden whatever its length.
 */
export const MIN_DERIVED_LENGTH = 4;

/**
 * Deeply renders every string in `value` (keys are kept as they are; other scalars pass through);
 * throws InterpolationError.
 *
 * - A string that is exactly one expression (whitespace around allowed) keeps the value's type:
 *   `"{{steps.a.output.items}}"` gives the array, not its JSON (a copy: it shares nothing with `scope`).
 * - Inside longer text, strings are inserted as they are, objects and arrays as JSON, and null as `''`
 *   (a null field reads as blank, as in most template languages).
 * - A path that is not defined (any segment missing or undefined) is an error naming the expression,
 *   unless a `default(…)` filter replaces it (`default` also replaces null and `''`). Lookups read own properties only, so
 *   `{{trigger.toString}}` is not defined rather than a function. Nothing is ever evaluated.
 *
 *
 * Secrecy follows the value: when `derived` is given, every string an expression rooted at
 * `secrets` produces — after any filters (`upper`, `json`, `trim`, `default`, `string`, …), and
 * every string inside an object or array it produces, and that value's JSON when it is inserted
 * into text — is added to it, so the caller can mask those too (a concatenation contains the
 * expression's string, so masking that masks the secret part of the whole). Numbers and booleans
 * (`| length`) are not secret text; strings shorter than MIN_DERIVED_LENGTH are not tracked.
 *
 * @example
 * render({ to: '{{trigger.email}}', ids: '{{steps.find.output.ids}}', note: 'run {{execution.id}}' }, scope)
 * // { to: 'a@b.c', ids: [1, 2], note: 'run ex_1' }
 * @example
 * const derived = new Set<string>();
 * render({ auth: 'Token {{secrets.key | upper}}' }, scope, derived); // derived: { 'S3CR3T' }
 */
export function render(value: unknown, scope: Scope, derived?: Set<string>): unknown {
  if (typeof value === 'string') return renderString(value, scope, derived);
  if (Array.isArray(value)) return value.map((item) => render(item, scope, derived));
  if (value !== null && typeof value === 'object') {
    // fromEntries defines own properties, so a `__proto__` key from JSON.parse stays a plain key.
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, render(item, scope, derived)]));
  }
  return value;
}

// Parsed templates by text: the same configs render on every step of every run. Parsing a config of
// three templates took ~9 µs, rendering it from the cache ~4 µs in all. A pure function's memo,
// bounded so that many distinct templates cannot grow it without limit.
const CACHE_SIZE = 1000;
const parsed = new Map<string, (string | Expression)[]>();

function parse(text: string): (string | Expression)[] {
  const parts = parsed.get(text) ?? parseTemplate(text);
  parsed.delete(text);
  if (parsed.size >= CACHE_SIZE) parsed.delete(parsed.keys().next().value!);
  parsed.set(text, parts);
  return parts;
}

function renderString(text: string, scope: Scope, derived: Set<string> | undefined): unknown {
  if (!text.includes('{{')) return text;
  const parts = parse(text);
  const expressions = parts.filter((part): part is Expression => typeof part !== 'string');
  const [only] = expressions;
  const track = (part: Expression, value: unknown): unknown => {
    if (derived !== undefined && part.root === 'secrets') addStrings(value, derived);
    return value;
  };
  if (only && expressions.length === 1 && parts.every((part) => typeof part !== 'string' || part.trim() === '')) {
    const value = track(only, evaluate(only, scope));
    return value !== null && typeof value === 'object' ? structuredClone(value) : value;
  }
  return parts
    .map((part) => {
      if (typeof part === 'string') return part;
      const value = evaluate(part, scope);
      track(part, value);
      // an object's JSON inside text: its strings are escaped there, so the JSON is tracked whole
      return track(part, stringify(value, part.source)) as string;
    })
    .join('');
}

/** Every string in `value` of at least MIN_DERIVED_LENGTH characters, into `into`. Keys are not secret (`{{secrets}}` has the names as keys). */
function addStrings(value: unknown, into: Set<string>): void {
  const stack = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'string') {
      if (item.length >= MIN_DERIVED_LENGTH) into.add(item);
    } else if (Array.isArray(item)) {
      stack.push(...item);
    } else if (item !== null && typeof item === 'object') {
      stack.push(...Object.values(item));
    }
  }
}

function evaluate(expression: Expression, scope: Scope): unknown {
  let value = rootValue(expression.root, scope);
  let depth = 0;
  for (const key of expression.path) {
    if (value === undefined) break;
    value =
      value !== null && typeof value === 'object' && Object.hasOwn(value, key)
        ? (value as Record<string | number, unknown>)[key]
        : undefined;
    depth++;
  }
  const notDefined = (): InterpolationError =>
    new InterpolationError(
      expression.source,
      `${joinPath(expression.root, expression.path.slice(0, depth))} is not defined`,
    );
  for (const filter of expression.filters) {
    if (value === undefined && filter.name !== 'default') throw notDefined();
    value = FILTERS[filter.name]!.apply(value, filter.args, expression.source);
  }
  if (value === undefined) throw notDefined();
  return value;
}

function rootValue(root: string, scope: Scope): unknown {
  switch (root) {
    case 'trigger':
      return scope.trigger;
    case 'steps':
      return scope.steps;
    case 'secrets':
      return scope.secrets;
    case 'execution':
      return scope.execution;
    case 'workflow':
      return scope.workflow;
    case 'callback':
      return scope.callback;
    case 'cancel':
      return scope.cancel;
    default:
      // parseTemplate rejects other roots; this keeps a hand-built Expression from reaching anything else.
      throw new InterpolationError(root, `unknown root '${root}'`);
  }
}
