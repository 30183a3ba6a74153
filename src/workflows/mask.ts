import { maskNeedles, secretNeedles } from '../mask.js';

/**
 * A deep copy of `value` with every occurrence of each secret value (in strings, and in object
 * keys) replaced by `***`, in any of the forms `secretForms` lists (JSON-escaped, percent-encoded,
 * base64, HTML-escaped). Every character that any occurrence covers is hidden, so a secret that
 * contains another is masked whole, and two that overlap (`abc`, `bcd` in `abcd`) or sit side by
 * side become one `***`: no fragment of either is left. Empty secrets are ignored.
 *
 * Arrays, plain objects, `Map`, `Set`, `Date` and errors (`message`, `stack`, `cause` too) are
 * copied; an object with `toJSON` (a `URL`, say) becomes its masked JSON form, which is what the
 * journal would have written; other class instances keep their prototype and have their own
 * properties masked. Cycles are preserved. Binary data, numbers and functions are kept as they are.
 *
 * @example mask({ url: 'https://api?key=s3cr3t' }, ['s3cr3t']) // { url: 'https://api?key=***' }
 */
export function mask<T>(value: T, secrets: Iterable<string>): T {
  const needles = secretNeedles(secrets);
  return copy(value, needles, new Map()) as T;
}

function copy(value: unknown, needles: string[], seen: Map<object, unknown>): unknown {
  if (typeof value === 'string') return maskNeedles(value, needles);
  if (typeof value !== 'object' || value === null) return value;
  if (seen.has(value)) return seen.get(value);
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return value;
  if (value instanceof Date) return new Date(value.getTime());
  const again = (v: unknown): unknown => copy(v, needles, seen);
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    seen.set(value, out);
    for (const item of value) out.push(again(item));
    return out;
  }
  if (value instanceof Map) {
    const out = new Map<unknown, unknown>();
    seen.set(value, out);
    for (const [k, v] of value) out.set(again(k), again(v));
    return out;
  }
  if (value instanceof Set) {
    const out = new Set<unknown>();
    seen.set(value, out);
    for (const item of value) out.add(again(item));
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  const plain = proto === Object.prototype || proto === null;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (!plain && !(value instanceof Error) && typeof toJSON === 'function') {
    seen.set(value, undefined);
    const out = again(toJSON.call(value));
    seen.set(value, out);
    return out;
  }
  const out = Object.create(proto as object | null) as Record<string, unknown>;
  seen.set(value, out);
  // errors keep message, stack and cause as own non-enumerable properties: copy those too
  const keys = value instanceof Error ? Object.getOwnPropertyNames(value) : Object.keys(value);
  for (const key of keys) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    const item: unknown =
      descriptor && 'value' in descriptor ? descriptor.value : (value as Record<string, unknown>)[key];
    // defineProperty, not assignment: a key '__proto__' (JSON.parse makes them) stays a plain key
    Object.defineProperty(out, maskNeedles(key, needles), {
      value: again(item),
      enumerable: descriptor?.enumerable ?? true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
