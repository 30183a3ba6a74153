import { RunledgerError } from '../../errors.js';
import { FILTERS } from './filters.js';

/**
 * A `{{ … }}` template that cannot be parsed or rendered. The message starts with the expression:
 * `{{trigger.nme}}: trigger.nme is not defined`.
 *
 * @example
 * try { render(step.config, scope) }
 * catch (e) { if (e instanceof InterpolationError) failStep(e.message) }
 */
export class InterpolationError extends RunledgerError {
  override readonly code = 'interpolation';
  override name = 'InterpolationError';
  constructor(
    readonly expression: string,
    message: string,
  ) {
    super(`{{${expression}}}: ${message}`);
  }
}

/** One parsed `{{ … }}`: `source` is the trimmed text between the braces. */
export interface Expression {
  source: string;
  root: string;
  path: (string | number)[];
  filters: { name: string; args: (string | number)[] }[];
}

const ROOTS = new Set(['trigger', 'steps', 'secrets', 'execution', 'workflow', 'callback', 'cancel', 'params']);
// Rejected even though lookups use own properties only: a path naming them is never legitimate.
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);
// Hyphens are allowed because there is no arithmetic to confuse them with (`steps.fetch-user`).
const NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const IDENT = /[A-Za-z_][A-Za-z0-9_-]*/y;
const INDEX = /\d+/y;
const NUMBER = /-?\d+(?:\.\d+)?/y;
// A backslash in a quoted string escapes the next character.
const QUOTED = String.raw`'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"`;
const STRING = new RegExp(QUOTED, 'sy');
// An expression's text up to its `}}`, skipping quoted strings (`default('}}')`).
const BODY = new RegExp(`(?:[^'"}]|}(?!})|${QUOTED})*}}`, 'sy');
const SPACE = /\s*/y;

/**
 * Splits a template string into literal text and parsed expressions; throws InterpolationError on
 * bad syntax, an unknown root or filter, a filter's wrong argument count, or a forbidden segment.
 *
 * @example parseTemplate('Hi {{trigger.name | upper}}!')
 * // ['Hi ', { source: 'trigger.name | upper', root: 'trigger', path: ['name'], filters: [{ name: 'upper', args: [] }] }, '!']
 */
export function parseTemplate(text: string): (string | Expression)[] {
  const parts = parseParts(text);
  for (const part of parts) if (part instanceof InterpolationError) throw part;
  return parts as (string | Expression)[];
}

/**
 * Every problem in the templates inside `value` (a config object), each with a JSON path built from
 * `path`; empty when fine.
 *
 * @example templateProblems({ url: '{{trigger.url | shout}}' }, 'steps[1].config')
 * // [{ path: 'steps[1].config.url', message: "{{trigger.url | shout}}: unknown filter 'shout'" }]
 */
export function templateProblems(value: unknown, path: string): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  eachString(value, path, (text, at) => {
    for (const part of parseParts(text))
      if (part instanceof InterpolationError) problems.push({ path: at, message: part.message });
  });
  return problems;
}

/**
 * Every step id that the templates in `value` reference via `steps.<id>`, in order of first use.
 * Templates with errors are skipped (templateProblems reports them).
 *
 * @example stepReferences({ body: '{{steps.fetch.output.id}} {{steps["b 2"].output}}' }) // ['fetch', 'b 2']
 */
export function stepReferences(value: unknown): string[] {
  const ids = new Set<string>();
  eachString(value, '', (text) => {
    for (const part of parseParts(text)) {
      if (
        typeof part === 'object' &&
        !(part instanceof InterpolationError) &&
        part.root === 'steps' &&
        typeof part.path[0] === 'string'
      )
        ids.add(part.path[0]);
    }
  });
  return [...ids];
}

/** Whether a template inside `value` reads `root` (`callback`, say). */
export function usesRoot(value: unknown, root: string): boolean {
  let found = false;
  eachString(value, '', (text) => {
    for (const part of parseParts(text))
      if (typeof part === 'object' && !(part instanceof InterpolationError) && part.root === root) found = true;
  });
  return found;
}

/**
 * Every secret name the templates in `value` use (`{{secrets.<name>}}`), each with the JSON path of
 * the string it is in. Templates with errors are skipped (templateProblems reports them).
 *
 * @example secretReferences({ headers: { Authorization: 'Bearer {{secrets.api_key}}' } }, 'config') // [{ name: 'api_key', path: 'config.headers.Authorization' }]
 */
export function secretReferences(value: unknown, path: string): { name: string; path: string }[] {
  const found: { name: string; path: string }[] = [];
  eachString(value, path, (text, at) => {
    for (const part of parseParts(text)) {
      if (
        typeof part === 'object' &&
        !(part instanceof InterpolationError) &&
        part.root === 'secrets' &&
        typeof part.path[0] === 'string'
      )
        found.push({ name: part.path[0], path: at });
    }
  });
  return found;
}

/**
 * `base` extended by `keys` in JSON-path notation: `.name`, `[2]`, `["first name"]`.
 *
 * @example joinPath('steps[1].config', ['headers', 'Content-Type']) // 'steps[1].config.headers.Content-Type'
 */
export function joinPath(base: string, keys: (string | number)[]): string {
  let out = base;
  for (const key of keys) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (NAME.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(key)}]`;
  }
  return out;
}

function eachString(value: unknown, path: string, visit: (text: string, path: string) => void): void {
  if (typeof value === 'string') visit(value, path);
  else if (Array.isArray(value))
    value.forEach((item, i) => {
      eachString(item, joinPath(path, [i]), visit);
    });
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) eachString(item, joinPath(path, [key]), visit);
}

/** Errors are returned in place, not thrown, so templateProblems can report every bad expression. */
function parseParts(text: string): (string | Expression | InterpolationError)[] {
  const parts: (string | Expression | InterpolationError)[] = [];
  let at = 0;
  for (let open = text.indexOf('{{'); open !== -1; open = text.indexOf('{{', at)) {
    if (open > at) parts.push(text.slice(at, open));
    BODY.lastIndex = open + 2;
    const body = BODY.exec(text);
    if (!body) {
      const rest = text.slice(open + 2).trim();
      parts.push(
        new InterpolationError(rest.length > 40 ? `${rest.slice(0, 40)}…` : rest, "'{{' is not closed by '}}'"),
      );
      return parts;
    }
    const source = body[0].slice(0, -2).trim();
    try {
      parts.push(parseExpression(source));
    } catch (error) {
      if (!(error instanceof InterpolationError)) throw error;
      parts.push(error);
    }
    at = open + 2 + body[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

/** Recursive descent over `root(.name | [index] | ["key"])* (| filter(literal, …)?)*`; nothing else is accepted. */
function parseExpression(source: string): Expression {
  let at = 0;
  const fail = (why: string): never => {
    throw new InterpolationError(source, why);
  };
  const unexpected = (): never =>
    fail(at < source.length ? `unexpected '${source[at]}' at column ${at + 1}` : 'unexpected end of expression');
  const take = (re: RegExp): string | undefined => {
    re.lastIndex = at;
    const match = re.exec(source);
    if (match) at = re.lastIndex;
    return match?.[0];
  };
  // Whitespace is allowed around `|`, `(`, `,` and `)`, not inside a path.
  const punct = (ch: string): boolean => {
    take(SPACE);
    if (source[at] !== ch) return false;
    at++;
    take(SPACE);
    return true;
  };
  const string = (): string | undefined => take(STRING)?.slice(1, -1).replace(/\\(.)/gs, '$1');
  const literal = (): string | number => {
    const number = take(NUMBER);
    return number === undefined ? (string() ?? unexpected()) : Number(number);
  };
  const bracketKey = (): string | number => {
    const digits = take(INDEX);
    const key = digits === undefined ? (string() ?? unexpected()) : Number(digits);
    if (source[at] !== ']') unexpected();
    at++;
    return key;
  };

  if (source === '') fail('the expression is empty');
  const root = take(IDENT) ?? unexpected();
  if (!ROOTS.has(root)) fail(`unknown root '${root}' (use trigger, steps, secrets, execution or workflow)`);
  const path: (string | number)[] = [];
  while (source[at] === '.' || source[at] === '[') {
    const key = source[at++] === '.' ? (take(IDENT) ?? unexpected()) : bracketKey();
    if (typeof key === 'string' && FORBIDDEN.has(key)) fail(`'${key}' is not allowed in a path`);
    path.push(key);
  }
  const filters: Expression['filters'] = [];
  while (punct('|')) {
    const name = take(IDENT) ?? unexpected();
    if (!Object.hasOwn(FILTERS, name)) fail(`unknown filter '${name}'`);
    const args: (string | number)[] = [];
    if (punct('(') && !punct(')')) {
      do args.push(literal());
      while (punct(','));
      if (!punct(')')) unexpected();
    }
    const [min, max] = FILTERS[name]!.arity;
    if (args.length < min || args.length > max)
      fail(`filter '${name}' takes ${min === max ? min : `${min} to ${max}`} argument(s), got ${args.length}`);
    filters.push({ name, args });
  }
  if (at < source.length) unexpected();
  return { source, root, path, filters };
}
