import { formatBytes } from '../json.js';
import { HttpError } from './errors.js';

/** Request bodies larger than this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The request's JSON body, read with a size cap: a declared or actual size over `limit` → 413
 * naming both; malformed JSON → 400 with the parser's message; an empty body → `undefined`.
 */
export async function readJson(request: Request, limit = MAX_BODY_BYTES): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > limit) throw tooLarge(`is ${formatBytes(declared)}`, limit);
  if (!request.body) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(`is over ${formatBytes(size)}`, limit);
    }
    chunks.push(value);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'malformed_json', `request body is not valid JSON: ${(error as Error).message}`);
  }
}

function tooLarge(size: string, limit: number): HttpError {
  return new HttpError(413, 'payload_too_large', `request body ${size}, over the limit of ${formatBytes(limit)}`);
}
