import { checkStorable, formatBytes } from '../json.js';
import { ValidationError } from '../errors.js';
import { HttpError } from './errors.js';

/** Request bodies larger than this are refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * How deeply a request body may nest. Lower than what the journal stores (`MAX_JSON_DEPTH`, 128):
 * a body is wrapped in a few levels of event data before it is stored, and must still fit.
 */
export const MAX_BODY_DEPTH = 64;

/**
 * The request's JSON body, read with a size cap: a declared or actual size over `limit` → 413
 * naming both; malformed JSON → 400 with the parser's message; an empty body → `undefined`.
 * A body nested deeper than `MAX_BODY_DEPTH`, or with U+0000 or an unpaired surrogate in a string
 * or key, is a ValidationError (400) naming the field, before any code that recurses sees it
 * (V8's JSON.parse does not recurse: half a million levels parse fine).
 * A non-empty body must be declared JSON (`Content-Type: application/json` or `application/*+json`),
 * else 415, unless `anyType`: the types a page of another origin can send without asking first
 * (text/plain, forms) are the ones refused, so a web page cannot post JSON to the API.
 */
export async function readJson(
  request: Request,
  options: { limit?: number; anyType?: boolean } = {},
): Promise<unknown> {
  const limit = options.limit ?? MAX_BODY_BYTES;
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > limit) throw tooLarge(`is ${formatBytes(declared)}`, limit);
  // with a declared length, the HTTP parser ends the body there: read it at once (under
  // @hono/node-server straight from the socket, without making a web stream); without one, in
  // chunks, counting
  const text = Number.isFinite(declared) ? await request.text() : await readCapped(request, limit);
  if (text.trim() === '') return undefined;
  if (!options.anyType) checkJsonType(request.headers.get('content-type'));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, 'malformed_json', `request body is not valid JSON: ${(error as Error).message}`);
  }
  checkBody(value);
  return value;
}

const JSON_TYPE = /^application\/([\w.!#$&^+-]+\+)?json$/;

/** `application/json` or `application/*+json`, with parameters (`; charset=utf-8`) or without. */
function checkJsonType(header: string | null): void {
  const type = (header ?? '').split(';')[0]!.trim().toLowerCase();
  if (JSON_TYPE.test(type)) return;
  throw new HttpError(
    415,
    'unsupported_media_type',
    `content-type: ${header === null ? 'missing' : `'${header}' is not JSON`}; a request body is accepted as application/json (or application/*+json, with parameters such as charset)`,
  );
}

async function readCapped(request: Request, limit: number): Promise<string> {
  if (!request.body) return '';
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
  return Buffer.concat(chunks).toString('utf8');
}

/** See `readJson`: depth, U+0000 and unpaired surrogates, with field paths relative to the body. */
export function checkBody(value: unknown): void {
  try {
    checkStorable('', value, MAX_BODY_DEPTH);
  } catch (error) {
    if (error instanceof ValidationError && error.path === '')
      throw new ValidationError('(body)', error.problems[0]!.message);
    throw error;
  }
}

function tooLarge(size: string, limit: number): HttpError {
  return new HttpError(413, 'payload_too_large', `request body ${size}, over the limit of ${formatBytes(limit)}`);
}
