import { ValidationError } from './errors.js';

/**
 * Checks that `value` survives JSON and fits in `maxBytes` once serialized; the error names the
 * field, the size and the limit. Returns the serialized size in bytes.
 *
 * @example checkJson('payload', { to: 'a@b.c' }, 1024 * 1024) // 16
 */
export function checkJson(path: string, value: unknown, maxBytes: number): number {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new ValidationError(path, `is not JSON-serializable (${error instanceof Error ? error.message : String(error)})`);
  }
  if (text === undefined) throw new ValidationError(path, `is not JSON-serializable (${typeof value})`);
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) throw new ValidationError(path, `is ${formatBytes(bytes)}, over the limit of ${formatBytes(maxBytes)}`);
  return bytes;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB (${bytes} bytes)`;
  return `${(bytes / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB (${bytes} bytes)`;
}

/** A non-empty string of at most `max` characters, or a ValidationError naming `path`. */
export function checkName(path: string, value: unknown, max = 256): string {
  if (typeof value !== 'string' || value.length === 0) throw new ValidationError(path, 'must be a non-empty string');
  if (value.length > max) throw new ValidationError(path, `is ${value.length} characters, over the limit of ${max}`);
  return value;
}
