/**
 * EventBridge-style event patterns over an event envelope (`{ id, source, "detail-type", detail, time }`).
 *
 * Semantics, following the EventBridge content-filtering rules:
 * - Every key of a pattern must match (AND); a nested object matches the nested field; a leaf is an array
 *   whose items are OR-ed: literal values (string, number, boolean, null; numbers compare by value, so
 *   300 matches 300.0; "300" does not match 300) and matchers (`prefix`, `suffix`, `equals-ignore-case`,
 *   `wildcard`, `anything-but`, `numeric`, `exists`, `cidr`).
 * - A leaf tests the field's **leaf values**: the value itself when it is a scalar, or the scalar elements
 *   of an array (nested arrays flattened). The field matches when any leaf value matches, so an
 *   `anything-but` matches `["a", "b"]` when either element is not excluded.
 * - `exists: true` matches when the field has at least one leaf value (null counts); `exists: false` when
 *   it has none: absent, under a missing or non-object parent, an object (EventBridge tests existence on
 *   leaf nodes only), or an empty array. `anything-but` needs a leaf value: it never matches an absent field.
 * - A nested pattern over an array of objects matches when one element matches the whole nested pattern.
 * - Only own properties of the event are read; matching reads JSON data and never throws on odd shapes.
 * Not supported: `$or`, IPv6 `cidr`, the EventBridge range limit on numbers (JS doubles are compared).
 */

/** An event pattern: field names mapped to arrays of allowed values/matchers, or to nested patterns. */
export type Pattern = Record<string, unknown>;

/** One reason a pattern (or input mapping) was rejected; `path` names the bad part, e.g. `pattern.detail.amount[0].numeric`. */
export interface PatternProblem {
  path: string;
  message: string;
}

const MATCHERS = ['prefix', 'suffix', 'equals-ignore-case', 'wildcard', 'anything-but', 'numeric', 'exists', 'cidr'];
const ANYTHING_BUT_MATCHERS = ['prefix', 'suffix', 'equals-ignore-case', 'wildcard'];
const LOWER_BOUNDS = ['>', '>='];
const UPPER_BOUNDS = ['<', '<='];

type Scalar = string | number | boolean | null;

/**
 * Every problem in `pattern`, each with its path; an empty list means the pattern is valid.
 *
 * @example validatePattern({ detail: { amount: [{ numeric: ['>', 'x'] }] } })
 * // [{ path: 'pattern.detail.amount[0].numeric[1]', message: 'must be a finite number' }]
 */
export function validatePattern(pattern: unknown, path = 'pattern'): PatternProblem[] {
  const problems: PatternProblem[] = [];
  checkObject(pattern, path, problems);
  return problems;
}

/**
 * True when the event matches; call only with a pattern that validated.
 *
 * @example matches({ source: ['shop'], detail: { amount: [{ numeric: ['>=', 100] }] } }, { source: 'shop', detail: { amount: 300 } }) // true
 */
export function matches(pattern: Pattern, event: unknown): boolean {
  return matchObject(pattern, event);
}

function checkObject(value: unknown, path: string, problems: PatternProblem[]): void {
  if (!isRecord(value)) {
    problems.push({ path, message: 'must be an object of fields' });
    return;
  }
  const keys = Object.keys(value);
  if (keys.length === 0) problems.push({ path, message: 'must name at least one field' });
  for (const key of keys) {
    const child = value[key];
    const at = childPath(path, key);
    if (Array.isArray(child)) checkLeaf(child, at, problems);
    else if (isRecord(child)) checkObject(child, at, problems);
    else problems.push({ path: at, message: 'must be an array of values and matchers, or a nested pattern object' });
  }
}

function checkLeaf(list: unknown[], path: string, problems: PatternProblem[]): void {
  if (list.length === 0) problems.push({ path, message: 'must list at least one value or matcher' });
  list.forEach((item, index) => {
    const at = `${path}[${index}]`;
    if (isScalar(item)) {
      if (typeof item === 'number' && !Number.isFinite(item))
        problems.push({ path: at, message: 'must be a finite number' });
      return;
    }
    if (!isRecord(item)) {
      problems.push({ path: at, message: 'must be a string, number, boolean, null or a matcher object' });
      return;
    }
    const keys = Object.keys(item);
    const key = keys[0];
    if (key === undefined || keys.length > 1) {
      problems.push({ path: at, message: `a matcher has exactly one key (got ${keys.length})` });
      return;
    }
    const message = matcherProblem(key, item[key], at, problems);
    if (message !== null) problems.push({ path: childPath(at, key), message });
  });
}

/** The problem with one matcher's argument, or null; `anything-but` and `numeric` report their own sub-paths. */
function matcherProblem(key: string, arg: unknown, at: string, problems: PatternProblem[]): string | null {
  switch (key) {
    case 'prefix':
    case 'suffix':
      if (typeof arg === 'string') return null;
      if (isRecord(arg) && Object.keys(arg).length === 1 && typeof arg['equals-ignore-case'] === 'string') return null;
      return 'must be a string, or { "equals-ignore-case": string }';
    case 'equals-ignore-case':
      return typeof arg === 'string' ? null : 'must be a string';
    case 'wildcard':
      return typeof arg === 'string' ? wildcardProblem(arg) : 'must be a string';
    case 'exists':
      return typeof arg === 'boolean' ? null : 'must be true or false';
    case 'cidr':
      return typeof arg === 'string' && parseCidr(arg) !== null
        ? null
        : 'must be an IPv4 CIDR block like "10.0.0.0/24" (IPv6 is not supported)';
    case 'numeric':
      checkNumeric(arg, childPath(at, key), problems);
      return null;
    case 'anything-but':
      checkAnythingBut(arg, childPath(at, key), problems);
      return null;
    default:
      return `unknown matcher '${key}' (expected one of ${MATCHERS.join(', ')})`;
  }
}

function checkNumeric(arg: unknown, path: string, problems: PatternProblem[]): void {
  if (!Array.isArray(arg) || (arg.length !== 2 && arg.length !== 4)) {
    problems.push({ path, message: 'must be [op, number] or [op, number, op, number] with op one of =, >, >=, <, <=' });
    return;
  }
  const before = problems.length;
  for (let i = 0; i < arg.length; i += 2) {
    const op: unknown = arg[i];
    const operand: unknown = arg[i + 1];
    if (typeof op !== 'string' || !['=', ...LOWER_BOUNDS, ...UPPER_BOUNDS].includes(op)) {
      problems.push({ path: `${path}[${i}]`, message: `must be one of =, >, >=, <, <= (got ${JSON.stringify(op)})` });
    }
    if (typeof operand !== 'number' || !Number.isFinite(operand))
      problems.push({ path: `${path}[${i + 1}]`, message: 'must be a finite number' });
  }
  if (arg.length === 2 || problems.length > before) return;
  const [lower, upper] = LOWER_BOUNDS.includes(arg[0] as string) ? [0, 2] : [2, 0];
  if (!LOWER_BOUNDS.includes(arg[lower] as string) || !UPPER_BOUNDS.includes(arg[upper] as string)) {
    problems.push({ path, message: 'a range needs one lower bound (> or >=) and one upper bound (< or <=)' });
  } else if (
    !inRange(arg, arg[lower + 1] as number) &&
    !inRange(arg, ((arg[lower + 1] as number) + (arg[upper + 1] as number)) / 2)
  ) {
    problems.push({ path, message: 'describes an empty range' });
  }
}

function checkAnythingBut(arg: unknown, path: string, problems: PatternProblem[]): void {
  if (isScalar(arg)) {
    if (typeof arg === 'number' && !Number.isFinite(arg)) problems.push({ path, message: 'must be a finite number' });
    return;
  }
  if (Array.isArray(arg)) {
    if (arg.length === 0) problems.push({ path, message: 'must list at least one value' });
    arg.forEach((value, index) => {
      if (!isScalar(value) || (typeof value === 'number' && !Number.isFinite(value))) {
        problems.push({ path: `${path}[${index}]`, message: 'must be a string, finite number, boolean or null' });
      }
    });
    return;
  }
  const keys = isRecord(arg) ? Object.keys(arg) : [];
  const key = keys[0];
  if (!isRecord(arg) || key === undefined || keys.length > 1 || !ANYTHING_BUT_MATCHERS.includes(key)) {
    problems.push({
      path,
      message: `must be a value, a list of values, or one of { ${ANYTHING_BUT_MATCHERS.join(' | ')}: string }`,
    });
    return;
  }
  const at = childPath(path, key);
  const values = Array.isArray(arg[key]) ? (arg[key] as unknown[]) : [arg[key]];
  if (values.length === 0) problems.push({ path: at, message: 'must list at least one string' });
  for (const value of values) {
    const message =
      typeof value !== 'string'
        ? 'must be a string or a list of strings'
        : key === 'wildcard'
          ? wildcardProblem(value)
          : null;
    if (message !== null) {
      problems.push({ path: at, message });
      return;
    }
  }
}

function matchObject(pattern: Pattern, value: unknown): boolean {
  for (const key of Object.keys(pattern)) {
    const rule = pattern[key];
    const field = ownField(value, key);
    const ok = Array.isArray(rule) ? matchLeaf(rule, field) : isRecord(rule) && matchNested(rule, field);
    if (!ok) return false;
  }
  return true;
}

function matchNested(pattern: Pattern, value: unknown): boolean {
  if (!Array.isArray(value)) return matchObject(pattern, value);
  const objects = flatten(value).filter(isRecord);
  return objects.length === 0
    ? matchObject(pattern, undefined)
    : objects.some((object) => matchObject(pattern, object));
}

function matchLeaf(rule: unknown[], value: unknown): boolean {
  const leaves = flatten(value).filter(isScalar);
  return rule.some((item) => {
    if (isScalar(item)) return leaves.some((leaf) => leaf === item);
    if (!isRecord(item)) return false;
    const key = Object.keys(item)[0];
    if (key === undefined) return false;
    const arg = item[key];
    if (key === 'exists') return arg === true ? leaves.length > 0 : leaves.length === 0;
    if (key === 'anything-but') return leaves.some((leaf) => !excludedBy(arg, leaf));
    return leaves.some((leaf) => test(key, arg, leaf));
  });
}

function excludedBy(arg: unknown, leaf: Scalar): boolean {
  if (isScalar(arg)) return arg === leaf;
  if (Array.isArray(arg)) return arg.includes(leaf);
  if (!isRecord(arg)) return false;
  const key = Object.keys(arg)[0];
  if (key === undefined) return false;
  const values = Array.isArray(arg[key]) ? (arg[key] as unknown[]) : [arg[key]];
  return values.some((value) => test(key, value, leaf));
}

function test(key: string, arg: unknown, leaf: Scalar): boolean {
  if (key === 'numeric') return typeof leaf === 'number' && Array.isArray(arg) && inRange(arg, leaf);
  if (typeof leaf !== 'string') return false;
  switch (key) {
    case 'prefix':
    case 'suffix': {
      const ignoreCase = isRecord(arg);
      const affix = ignoreCase ? arg['equals-ignore-case'] : arg;
      if (typeof affix !== 'string') return false;
      const [text, part] = ignoreCase ? [fold(leaf), fold(affix)] : [leaf, affix];
      return key === 'prefix' ? text.startsWith(part) : text.endsWith(part);
    }
    case 'equals-ignore-case':
      return typeof arg === 'string' && fold(leaf) === fold(arg);
    case 'wildcard':
      return typeof arg === 'string' && globMatch(arg, leaf);
    case 'cidr':
      return typeof arg === 'string' && inCidr(arg, leaf);
    default:
      return false;
  }
}

function inRange(spec: unknown[], value: number): boolean {
  for (let i = 0; i + 1 < spec.length; i += 2) {
    const bound = spec[i + 1];
    if (typeof bound !== 'number' || !compare(spec[i], value, bound)) return false;
  }
  return true;
}

function compare(op: unknown, value: number, bound: number): boolean {
  switch (op) {
    case '=':
      return value === bound;
    case '>':
      return value > bound;
    case '>=':
      return value >= bound;
    case '<':
      return value < bound;
    case '<=':
      return value <= bound;
    default:
      return false;
  }
}

/** The literal pieces between `*`s (`\*` is a literal star, `\\` a backslash), or a problem message. */
function parseWildcard(text: string): string[] | string {
  const pieces = [''];
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (char === '\\') {
      const next = text[i + 1];
      if (next !== '*' && next !== '\\') return 'may escape only * and \\ with a backslash';
      pieces[pieces.length - 1] += next;
      i++;
    } else if (char === '*') {
      if (text[i + 1] === '*') return 'must not contain consecutive * wildcards';
      pieces.push('');
    } else {
      pieces[pieces.length - 1] += char;
    }
  }
  return pieces;
}

function wildcardProblem(text: string): string | null {
  const parsed = parseWildcard(text);
  return typeof parsed === 'string' ? parsed : null;
}

/** Plain string search, no RegExp: each `*` spans any run of characters, so there is no backtracking blow-up. */
function globMatch(wildcard: string, text: string): boolean {
  const pieces = parseWildcard(wildcard);
  if (typeof pieces === 'string') return false;
  const first = pieces[0]!;
  if (pieces.length === 1) return text === first;
  const last = pieces[pieces.length - 1]!;
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) return false;
  let from = first.length;
  const end = text.length - last.length;
  for (const piece of pieces.slice(1, -1)) {
    const at = text.indexOf(piece, from);
    if (at < 0 || at + piece.length > end) return false;
    from = at + piece.length;
  }
  return true;
}

function parseIPv4(text: string): number | null {
  const parts = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!parts) return null;
  let address = 0;
  for (const part of parts.slice(1)) {
    const octet = Number(part);
    if (octet > 255) return null;
    address = address * 256 + octet;
  }
  return address;
}

function parseCidr(text: string): { network: number; bits: number } | null {
  const match = /^([\d.]+)\/(\d{1,2})$/.exec(text);
  const network = match ? parseIPv4(match[1]!) : null;
  const bits = Number(match?.[2]);
  return network === null || bits > 32 ? null : { network, bits };
}

function inCidr(cidr: string, text: string): boolean {
  const block = parseCidr(cidr);
  const address = parseIPv4(text);
  if (block === null || address === null) return false;
  const size = 2 ** (32 - block.bits);
  return Math.floor(address / size) === Math.floor(block.network / size);
}

function fold(text: string): string {
  return text.toLowerCase();
}

/** The scalars and objects in `value`, arrays flattened (nothing for undefined); cycles are skipped. */
function flatten(value: unknown, seen = new Set<unknown>()): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return [value];
  if (seen.has(value)) return [];
  seen.add(value);
  return value.flatMap((element) => flatten(element, seen));
}

function ownField(value: unknown, key: string): unknown {
  return isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function childPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$-]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
