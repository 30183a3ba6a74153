/*
 * Reading server-sent events (text/event-stream), for the client and the dashboard alike: no Node API and no
 * dependency, since the dashboard bundles it. The server writes `id:`, `event:` and one `data:` line per message
 * (server/sse.ts); a comment or a keep-alive frame carries no data and is skipped.
 */

/** One message of the stream: `id` is where a reconnect resumes (`Last-Event-ID`), `data` its text (JSON for runledger). */
export interface SseMessage {
  id: string;
  event: string;
  data: string;
}

/**
 * A reader of one stream: give it the chunks as they arrive, it answers the messages they complete, in order (a
 * message cut between two chunks waits for its end).
 *
 * @example
 * const read = sseReader();
 * for await (const chunk of response.body.pipeThrough(new TextDecoderStream()))
 *   for (const m of read(chunk)) console.log(m.event, JSON.parse(m.data));
 */
export function sseReader(): (chunk: string) => SseMessage[] {
  let buffer = '';
  return (chunk) => {
    const frames = (buffer + chunk).split('\n\n');
    buffer = frames.pop() ?? '';
    return frames.map(parseFrame).filter((m): m is SseMessage => m !== undefined);
  };
}

/** A frame's fields; undefined when it has no data (a comment, a keep-alive). */
function parseFrame(frame: string): SseMessage | undefined {
  const message: SseMessage = { id: '', event: 'message', data: '' };
  let data = '';
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') message.id = value;
    else if (field === 'event') message.event = value;
    else if (field === 'data') data += (data ? '\n' : '') + value;
  }
  if (!data) return undefined;
  message.data = data;
  return message;
}
