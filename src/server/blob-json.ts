import { isBlobRef, type BlobRef, type Blobs } from '../runtime/pass/blobs.js';

/** Bytes of referenced values under which a response is built in memory rather than streamed. */
const STREAM_FROM_BYTES = 1 << 20;

/**
 * `value` as a JSON response with the blob references in it replaced by their values. Big ones are
 * streamed chunk by chunk (a chunk is the value's JSON, so it goes out as it is): the server never
 * holds a 50 MB output whole. Returns `value` itself when it holds no reference.
 */
export async function jsonWithBlobs(value: unknown, blobs: Blobs): Promise<unknown> {
  const refs: BlobRef[] = [];
  const text = JSON.stringify(value, (_key, v) => {
    if (!isBlobRef(v)) return v;
    refs.push(v);
    return `\u0000blob#${refs.length - 1}\u0000`;
  });
  if (refs.length === 0) return value;
  if (refs.reduce((n, r) => n + r.size, 0) < STREAM_FROM_BYTES) {
    return new Response(await replaceAsync(text, async (i) => JSON.stringify(await blobs.resolve(refs[i]!))), {
      headers: { 'content-type': 'application/json' },
    });
  }
  const parts = text.split(/"\\u0000blob#(\d+)\\u0000"/);
  const encoder = new TextEncoder();
  async function* pieces(): AsyncGenerator<Uint8Array> {
    for (let i = 0; i < parts.length; i++) {
      if (i % 2 === 0) yield encoder.encode(parts[i]!);
      else
        for await (const chunk of blobs.chunks(refs[Number(parts[i])]!))
          yield new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    }
  }
  const source = pieces();
  // pull: the next chunk is read only when the client took the last one
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await source.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await source.return(undefined);
    },
  });
  return new Response(body, { headers: { 'content-type': 'application/json' } });
}

async function replaceAsync(text: string, value: (i: number) => Promise<string>): Promise<string> {
  const parts = text.split(/"\\u0000blob#(\d+)\\u0000"/);
  for (let i = 1; i < parts.length; i += 2) parts[i] = await value(Number(parts[i]));
  return parts.join('');
}
