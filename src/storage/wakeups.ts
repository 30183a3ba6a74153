import type { AppendResult, EventAppendParams } from './store.js';

/* How an append's wake-ups are packed into notification payloads, and read back. */

/**
 * Streams an append wakes by name; above this, '' (a bulk enqueue). A group commit appends to
 * the streams of every run of its batch: with '' each of them, every waiting caller and every
 * pass's cancel watch in every process would read again (measured at 100 runs in flight: 12 reads
 * of a stream per run instead of 1).
 */
const WAKE_STREAMS = 512;

/**
 * Bytes of the stream names packed into one wake-up (PostgreSQL's NOTIFY takes up to 8,000): a
 * batch's streams travel in a few notifications, not one each (one each cost a drain at
 * concurrency 50 about 12 µs of CPU per task, measured).
 */
const WAKE_BYTES = 7000;

/** The wake-up payloads of an append: its streams, several to a payload, or '' when it touched many (a bulk enqueue). */
export function appendWakeups(p: EventAppendParams, result: AppendResult): string[] {
  const streams = new Map<string, number>();
  for (const event of result.events)
    streams.set(event.streamId, Math.max(streams.get(event.streamId) ?? 0, event.version));
  if (streams.size === 0) for (const a of p.appends) streams.set(a.streamId, 0);
  if (streams.size > WAKE_STREAMS) return [''];
  const payloads: string[] = [];
  let payload = '';
  for (const [stream, version] of streams) {
    const entry = version > 0 ? `${stream}${VERSION_MARK}${version}` : stream;
    if (payload !== '' && Buffer.byteLength(payload) + Buffer.byteLength(entry) + 1 > WAKE_BYTES) {
      payloads.push(payload);
      payload = '';
    }
    payload = payload === '' ? entry : `${payload}${STREAM_MARK}${entry}`;
  }
  if (payload !== '') payloads.push(payload);
  return payloads;
}

/** Separates a wake-up's stream id from the version its append reached (stream ids hold no control characters). */
const VERSION_MARK = '\u001e';
/** Separates the streams packed into one wake-up. */
const STREAM_MARK = '\u001d';

/** A wake-up as sent: the stream id, and the version its append reached when there was one. */
export function parseWakeup(payload: string): { stream: string; version: number | undefined } {
  const mark = payload.lastIndexOf(VERSION_MARK);
  if (mark < 0) return { stream: payload, version: undefined };
  return { stream: payload.slice(0, mark), version: Number(payload.slice(mark + 1)) };
}

/** The streams of a wake-up as sent, each with the version its append reached when there was one ('' stays one wake-up for anything). */
export function parseWakeups(payload: string): Array<{ stream: string; version: number | undefined }> {
  return payload.split(STREAM_MARK).map(parseWakeup);
}
