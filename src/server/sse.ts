import type { Watch, WatchMatch } from '../journal/journal.js';

/** One server-sent event: `id:` is where a reconnect resumes (`Last-Event-ID`), `event:` its type. */
export interface SseMessage {
  id: string;
  event: string;
  data: unknown;
}

/** What one read of a feed found; `end` closes the stream after its messages are sent. */
export interface SseBatch {
  messages: SseMessage[];
  end: boolean;
}

export interface SseFeed {
  /** Which commits (stream ids) concern this feed; '' always does. */
  wakesOn(streamId: string): boolean;
  /** The next batch after the last one it returned (the feed keeps its own cursor). */
  next(): Promise<SseBatch>;
}

/** Starts a watch of commits: `(match) => journal.watch(match)`. */
export type WatchCommits = (match: WatchMatch) => Promise<Watch>;

export interface SseOptions {
  /** A comment line (`: ping`) after this long without a message, so proxies keep the connection. */
  heartbeatMs: number;
  /** How often to look when no wake-up arrives (one in another SQLite process never does): the fallback. */
  pollMs: number;
  /**
   * After a wake-up that found nothing, look again after these delays: on PostgreSQL an event can
   * be behind the committed-order horizon for a moment after its notification.
   */
  catchUpMs?: number[];
  /** The request's signal: the client went away. */
  signal?: AbortSignal;
}

const encoder = new TextEncoder();
const PING = encoder.encode(': ping\n\n');

/** The wire form of messages: JSON data is one line, so one `data:` field each. */
export function sseFrames(messages: SseMessage[]): string {
  return messages.map((m) => `id: ${m.id}\nevent: ${m.event}\ndata: ${JSON.stringify(m.data)}\n\n`).join('');
}

/**
 * A `text/event-stream` response fed by `feed`, produced on demand: the body is a ReadableStream
 * with a high-water mark of one chunk, and the feed is read (one page, one chunk) only when the
 * consumer pulls. A client that stops reading therefore holds at most the chunk in the queue plus
 * the one being written to its socket (@hono/node-server waits for `drain`): server memory per
 * connection is bounded by two pages of the feed, however far behind the client falls. While
 * idle, the producer sleeps until a wake-up for its streams, the fallback poll, or the heartbeat.
 *
 * @example return sseResponse((match) => journal.watch(match), feed, { heartbeatMs: 15_000, pollMs: 5_000, signal });
 */
export async function sseResponse(watchCommits: WatchCommits, feed: SseFeed, options: SseOptions): Promise<Response> {
  const watch = await watchCommits((streamId) => feed.wakesOn(streamId));
  let closed = false;
  let lastSent = Date.now();
  const finish = () => {
    if (closed) return;
    closed = true;
    options.signal?.removeEventListener('abort', finish);
    watch.wakeup.wake();
    void watch.stop();
  };
  options.signal?.addEventListener('abort', finish);
  if (options.signal?.aborted) finish();

  const end = (controller: ReadableStreamDefaultController<Uint8Array>) => {
    finish();
    try {
      controller.close();
    } catch {
      // already cancelled by the consumer
    }
  };

  const produce = async (controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> => {
    let catchUp = 0;
    for (;;) {
      if (closed) return end(controller);
      const batch = await feed.next();
      if (closed) return end(controller);
      if (batch.messages.length > 0) {
        controller.enqueue(encoder.encode(sseFrames(batch.messages)));
        lastSent = Date.now();
      }
      if (batch.end) return end(controller);
      if (batch.messages.length > 0) return;
      const heartbeatIn = lastSent + options.heartbeatMs - Date.now();
      if (heartbeatIn <= 0) {
        controller.enqueue(PING);
        lastSent = Date.now();
        return;
      }
      const delays = options.catchUpMs ?? [];
      const woken = await watch.wakeup.wait(Math.min(heartbeatIn, delays[catchUp - 1] ?? options.pollMs));
      catchUp = woken ? 1 : catchUp > 0 && catchUp < delays.length ? catchUp + 1 : 0;
    }
  };

  const body = new ReadableStream<Uint8Array>(
    {
      pull: (controller) =>
        produce(controller).catch((error: unknown) => {
          // the store failed: end the connection abruptly, so the client reconnects with its Last-Event-ID
          finish();
          controller.error(error);
        }),
      cancel: finish,
    },
    new CountQueuingStrategy({ highWaterMark: 1 }),
  );
  return new Response(body, {
    status: 200,
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    },
  });
}
