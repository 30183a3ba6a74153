import type { PatternProblem } from './pattern.js';

/**
 * Input mapping: how a rule turns a matched event into a run's input.
 *
 * A mapping is any JSON value. A string starting with `$` is a path into the event, the rest is kept as
 * a literal; objects and arrays are rendered element by element, so their strings may be paths too.
 * Paths: `$` (the whole event), `.name` (letters, digits, `_`, `$`, `-`), `[0]` (array index) and
 * `['odd key']` / `["odd key"]` (`\'`, `\"` and `\\` escaped). Names read own properties of objects
 * only, indexes read arrays only. A path that finds nothing yields `null`, so a run always receives
 * JSON. `__proto__`, `constructor` and `prototype` are refused as path segments and as mapping keys.
 * There is no escape for a literal string that starts with `$`.
 */

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

type Segment = string | number;

/**
 * Every problem in an input mapping, each with its path; an empty list means it is valid.
 *
 * @example validateInputMapping({ user: '$.detail..user' }) // [{ path: 'input.user', message: "has no field name after '.' at 8" }]
 */
export function validateInputMapping(input: unknown, path = 'input'): PatternProblem[] {
  const problems: PatternProblem[] = [];
  checkValue(input, path, problems);
  return problems;
}

/**
 * The run input for `event`: paths replaced by what they find (copied, not shared with the event), or
 * `null` when they find nothing or do not parse; validate the mapping first.
 *
 * @example mapInput({ session_id: '$.id', first: '$.detail.items[0]', plan: 'pro' }, event)
 * // { session_id: 'evt_1', first: { sku: 'A1' }, plan: 'pro' }
 */
export function mapInput(input: unknown, event: unknown): unknown {
  if (typeof input === 'string') return input.startsWith('$') ? lookup(event, parsePath(input)) : input;
  if (Array.isArray(input)) return input.map((item) => mapInput(item, event));
  if (isRecord(input))
    return Object.fromEntries(Object.entries(input).map(([key, value]) => [key, mapInput(value, event)]));
  return input;
}

function checkValue(value: unknown, path: string, problems: PatternProblem[]): void {
  if (typeof value === 'string') {
    if (!value.startsWith('$')) return;
    const parsed = parsePath(value);
    if (typeof parsed === 'string') problems.push({ path, message: parsed });
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => {
      checkValue(item, `${path}[${index}]`, problems);
    });
  } else if (isRecord(value)) {
    for (const [key, item] of Object.entries(value)) {
      const at = childPath(path, key);
      if (FORBIDDEN.has(key)) problems.push({ path: at, message: `'${key}' is not allowed as a key` });
      else checkValue(item, at, problems);
    }
  } else if (typeof value === 'number') {
    if (!Number.isFinite(value)) problems.push({ path, message: 'must be a finite number' });
  } else if (value !== null && typeof value !== 'boolean') {
    problems.push({ path, message: `must be a JSON value (got ${typeof value})` });
  }
}

/** The segments of a path, or a message saying where it stops making sense. */
function parsePath(text: string): Segment[] | string {
  if (!text.startsWith('$')) return "must start with '$'";
  const segments: Segment[] = [];
  let i = 1;
  while (i < text.length) {
    const char = text[i];
    let segment: Segment;
    if (char === '.') {
      const name = /^[\w$-]+/.exec(text.slice(i + 1))?.[0];
      if (name === undefined) return `has no field name after '.' at ${i}`;
      segment = name;
      i += 1 + name.length;
    } else if (char === '[') {
      const index = /^\[(0|[1-9]\d{0,8})\]/.exec(text.slice(i));
      const quoted = index ? null : readQuoted(text, i + 1);
      if (index) {
        segment = Number(index[1]);
        i += index[0].length;
      } else if (quoted !== null && text[quoted.end] === ']') {
        segment = quoted.value;
        i = quoted.end + 1;
      } else {
        return `has a bad bracket at ${i}: use [0] or ['key']`;
      }
    } else {
      return `has an unexpected ${JSON.stringify(char)} at ${i}: use .name, [0] or ['key']`;
    }
    if (typeof segment === 'string' && FORBIDDEN.has(segment)) return `must not read '${segment}'`;
    segments.push(segment);
  }
  return segments;
}

/** A quoted key starting at `start` and the index just past its closing quote, or null. */
function readQuoted(text: string, start: number): { value: string; end: number } | null {
  const quote = text[start];
  if (quote !== "'" && quote !== '"') return null;
  let value = '';
  for (let i = start + 1; i < text.length; i++) {
    const char = text[i]!;
    if (char === quote) return { value, end: i + 1 };
    if (char === '\\') {
      const next = text[i + 1];
      if (next !== "'" && next !== '"' && next !== '\\') return null;
      value += next;
      i++;
    } else {
      value += char;
    }
  }
  return null;
}

function lookup(event: unknown, segments: Segment[] | string): unknown {
  if (typeof segments === 'string') return null;
  let value = event;
  for (const segment of segments) {
    if (typeof segment === 'number')
      value = Array.isArray(value) && Object.hasOwn(value, segment) ? value[segment] : undefined;
    else value = isRecord(value) && Object.hasOwn(value, segment) ? value[segment] : undefined;
    if (value === undefined) return null;
  }
  return structuredClone(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function childPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
