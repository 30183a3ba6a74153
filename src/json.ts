import { ValidationError } from './errors.js';

/**
 * How deeply stored JSON may nest (objects and arrays inside one another). The code that copies,
 * masks, renders and serializes a value recurses once per level, and V8's JSON.stringify already
 * overflows the stack near 5,000 levels; 128 is far beyond any real document and far below that.
 * Request bodies have their own, lower limit (server/body.ts) so that what the API accepts still
 * fits here once wrapped in an event.
 */
export const MAX_JSON_DEPTH = 128;

/**
 * Checks that `value` can be stored the same way on every backend and fits in `maxBytes` once
 * serialized: JSON-serializable, nested at most `MAX_JSON_DEPTH` levels, and no string or key
 * holding U+0000 or an unpaired surrogate (PostgreSQL refuses both; SQLite would store them).
 * The error names the field (`payload.items[3].name`), the size and the limit. Returns the
 * serialized size in bytes.
 *
 * @example checkJson('payload', { to: 'a@b.c' }, 1024 * 1024) // 16
 */
export function checkJson(path: string, value: unknown, maxBytes: number): number {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    // a stack overflow is nesting: say where and what the limit is
    if (error instanceof RangeError) checkStorable(path, value);
    throw new ValidationError(
      path,
      `is not JSON-serializable (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  if (text === undefined) throw new ValidationError(path, `is not JSON-serializable (${typeof value})`);
  // after JSON.stringify, which names a cycle or a BigInt (the walk would report a cycle as too deep)
  if (!surelyStorable(text)) checkStorable(path, value);
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes)
    throw new ValidationError(path, `is ${formatBytes(bytes)}, over the limit of ${formatBytes(maxBytes)}`);
  return bytes;
}

/**
 * True when serialized JSON `text` cannot hold what `checkStorable` refuses, so the walk can be
 * skipped: JSON.stringify writes U+0000 and unpaired surrogates as `\u` escapes, and nesting
 * deeper than MAX_JSON_DEPTH takes more than that many `{` or `[`.
 */
function surelyStorable(text: string): boolean {
  if (text.includes('\\u')) return false;
  if (text.length <= 2 * MAX_JSON_DEPTH) return true;
  let openers = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 123 || c === 91) && ++openers > MAX_JSON_DEPTH) return false;
  }
  return true;
}

/**
 * Walks `value` without recursion (so a value nested 100,000 levels is refused, not a stack
 * overflow) and throws a ValidationError naming the first field that nests deeper than
 * `maxDepth` or holds a string or key that cannot be stored (see `checkText`).
 *
 * @example checkStorable('trigger_data', { a: 'x\u0000' }) // throws 'trigger_data.a: must not contain the character U+0000'
 */
export function checkStorable(path: string, value: unknown, maxDepth = MAX_JSON_DEPTH): void {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value, path, depth: 0 }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item.value === 'string') {
      checkText(item.path, item.value);
      continue;
    }
    if (typeof item.value !== 'object' || item.value === null) continue;
    if (item.depth >= maxDepth)
      throw new ValidationError(item.path, `nests deeper than the limit of ${maxDepth} levels`);
    if (Array.isArray(item.value)) {
      for (let i = item.value.length - 1; i >= 0; i--)
        stack.push({ value: item.value[i], path: `${item.path}[${i}]`, depth: item.depth + 1 });
      continue;
    }
    if (ArrayBuffer.isView(item.value) || item.value instanceof Date) continue;
    const entries = Object.entries(item.value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, inner] = entries[i]!;
      checkKey(item.path, key);
      stack.push({ value: inner, path: fieldPath(item.path, key), depth: item.depth + 1 });
    }
  }
}

// U+0000, or a surrogate that is not half of a pair
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what PostgreSQL cannot store
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * `text`, or a ValidationError naming `path` when it holds U+0000 or an unpaired surrogate: PostgreSQL
 * refuses both (text and jsonb alike) where SQLite stores them, so both backends refuse them here.
 *
 * @example checkText('name', 'a\ud800') // throws 'name: must be well-formed Unicode (it has an unpaired surrogate at index 1)'
 */
export function checkText(path: string, text: string): string {
  const found = UNSTORABLE.exec(text);
  if (found === null) return text;
  if (found[0] === '\u0000')
    throw new ValidationError(path, `must not contain the character U+0000 (at index ${found.index})`);
  throw new ValidationError(path, `must be well-formed Unicode (it has an unpaired surrogate at index ${found.index})`);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB (${bytes} bytes)`;
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB (${bytes} bytes)`;
}

/** A non-empty string of at most `max` characters that can be stored (see `checkText`), or a ValidationError naming `path`. */
export function checkName(path: string, value: unknown, max = 256): string {
  if (typeof value !== 'string' || value.length === 0) throw new ValidationError(path, 'must be a non-empty string');
  if (value.length > max) throw new ValidationError(path, `is ${value.length} characters, over the limit of ${max}`);
  return checkText(path, value);
}

/** A bad key is reported at the object that holds it (the key itself cannot be written as a path). */
function checkKey(path: string, key: string): void {
  try {
    checkText(path, key);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(
      path,
      `has a key ${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key)} that ${error.problems[0]!.message}`,
    );
  }
}

/** `base` extended by one key: `.name`, or `["first name"]` when the key is not a plain name. */
function fieldPath(base: string, key: string): string {
  if (!/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key))
    return `${base}[${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key)}]`;
  return base === '' ? key : `${base}.${key}`;
}
