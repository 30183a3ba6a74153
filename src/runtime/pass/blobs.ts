import { createHash } from 'node:crypto';
import type { NewEvent, Store, StoredEvent } from '../../storage/store.js';

/**
 * Values of any size. A step's input or output, a signal's payload, a run's input or result whose
 * JSON is over the threshold is cut into chunks stored by their sha256 (`Store.blobPut`, in the
 * transaction of the event), and the event holds only a reference. Readers get the value whole
 * (`resolve`); the API streams it chunk by chunk (`chunks`). The run that wrote a chunk owns it:
 * `Store.blobDelete({ owner: runId })` drops its chunks with the run.
 */
export interface BlobRef {
  $blob: string;
  /** Bytes of the value's JSON. */
  size: number;
  /** sha256 (hex) of each chunk, in order. */
  chunks: string[];
}

export interface BlobLimits {
  /** Larger values (their JSON, in bytes) go to chunks. Default 256 KiB. */
  thresholdBytes: number;
  /** Bytes per chunk. Default 1 MiB. */
  chunkBytes?: number;
}

/** The fields of an event's data that may hold a big value. */
const VALUE_FIELDS = ['input', 'output', 'payload'] as const;

export function isBlobRef(value: unknown): value is BlobRef {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as BlobRef).$blob === 'string' &&
    Array.isArray((value as BlobRef).chunks)
  );
}

export class Blobs {
  private readonly chunkBytes: number;

  constructor(
    private readonly store: Store,
    private readonly limits: BlobLimits,
  ) {
    this.chunkBytes = limits.chunkBytes ?? 1 << 20;
  }

  /** `value`, or a reference to it once its chunks are written in `tx` (owned by `owner`) when it is big. */
  async offload(tx: Store, owner: string, value: unknown): Promise<unknown> {
    if (value === null || (typeof value !== 'object' && typeof value !== 'string')) return value;
    if (isBlobRef(value)) return value;
    const json = JSON.stringify(value);
    if (Buffer.byteLength(json) <= this.limits.thresholdBytes) return value;
    const bytes = Buffer.from(json);
    const chunks: Array<{ hash: string; data: Buffer }> = [];
    for (let at = 0; at < bytes.length; at += this.chunkBytes) {
      const data = bytes.subarray(at, Math.min(at + this.chunkBytes, bytes.length));
      chunks.push({ hash: createHash('sha256').update(data).digest('hex'), data });
    }
    // one chunk at a time: the driver copies each parameter, and 50 copies of 1 MiB are not 50 MB at once
    for (const chunk of chunks) await tx.blobPut({ owner, chunks: [chunk] });
    const ref: BlobRef = {
      $blob: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
      size: bytes.length,
      chunks: chunks.map((c) => c.hash),
    };
    return ref;
  }

  /** Makes `owner` hold the chunks of `value` too (a run that reuses another's value keeps it when that one goes). */
  async adopt(tx: Store, owner: string, value: unknown): Promise<void> {
    if (!isBlobRef(value)) return;
    for (const hash of value.chunks) {
      const [data] = await tx.blobGet({ hashes: [hash] });
      await tx.blobPut({ owner, chunks: [{ hash, data: data! }] });
    }
  }

  /** Events as the journal should hold them: the big values of their data replaced by references. */
  async offloadEvents(tx: Store, owner: string, events: NewEvent[]): Promise<NewEvent[]> {
    const out: NewEvent[] = [];
    for (const event of events) {
      const data = event.data as Record<string, unknown> | null;
      if (typeof data !== 'object' || data === null || Array.isArray(data)) {
        out.push(event);
        continue;
      }
      let copy: Record<string, unknown> | null = null;
      for (const field of VALUE_FIELDS) {
        if (!(field in data)) continue;
        const stored = await this.offload(tx, owner, data[field]);
        if (stored !== data[field]) (copy ??= { ...data })[field] = stored;
      }
      out.push(copy ? { ...event, data: copy } : event);
    }
    return out;
  }

  /** The value a reference stands for (anything else as it is). */
  async resolve<T = unknown>(value: T): Promise<T> {
    if (!isBlobRef(value)) return value;
    const parts = await this.store.blobGet({ hashes: value.chunks });
    return JSON.parse(Buffer.concat(parts).toString('utf8')) as T;
  }

  /** Events with the values of their data whole again. */
  async resolveEvents(events: StoredEvent[]): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    for (const event of events) {
      const data = event.data as Record<string, unknown> | null;
      if (typeof data !== 'object' || data === null || !VALUE_FIELDS.some((f) => isBlobRef(data[f]))) {
        out.push(event);
        continue;
      }
      const copy = { ...data };
      for (const field of VALUE_FIELDS) copy[field] = await this.resolve(copy[field]);
      out.push({ ...event, data: copy });
    }
    return out;
  }

  /** The value's JSON, chunk by chunk: for a response that never holds all of it. */
  async *chunks(ref: BlobRef): AsyncGenerator<Buffer> {
    for (const hash of ref.chunks) {
      const [data] = await this.store.blobGet({ hashes: [hash] });
      yield data!;
    }
  }
}

/** Bytes of the big values `events` refer to: what resolving them holds in memory. */
export function blobBytes(events: StoredEvent[]): number {
  let bytes = 0;
  for (const event of events) {
    const data = event.data as Record<string, unknown> | null;
    if (typeof data !== 'object' || data === null) continue;
    for (const field of VALUE_FIELDS) if (isBlobRef(data[field])) bytes += (data[field] as BlobRef).size;
  }
  return bytes;
}

/** A run's view with its input, output and step values whole. */
export async function resolveView<
  V extends { input: unknown; output: unknown; steps: Array<{ input: unknown; output: unknown }> },
>(blobs: Blobs, view: V): Promise<V> {
  const steps = await Promise.all(
    view.steps.map(async (s) =>
      isBlobRef(s.input) || isBlobRef(s.output)
        ? { ...s, input: await blobs.resolve(s.input), output: await blobs.resolve(s.output) }
        : s,
    ),
  );
  return { ...view, input: await blobs.resolve(view.input), output: await blobs.resolve(view.output), steps };
}
