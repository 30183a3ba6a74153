/**
 * The `data` of each server-sent event in `body`, as the EventSource rules define it: lines end
 * in LF, CR or CRLF (also when split across chunks), the data lines of one event are joined with
 * LF, a blank line ends the event, comments and other fields are ignored.
 *
 * @example for await (const data of sseData(response.body)) if (data === '[DONE]') break;
 */
export async function* sseData(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  let pendingCr = false;
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    if (pendingCr && buffer.startsWith('\n')) buffer = buffer.slice(1);
    pendingCr = false;
    let end: number;
    while ((end = buffer.search(/[\r\n]/)) >= 0) {
      const line = buffer.slice(0, end);
      if (buffer[end] === '\r') {
        if (end + 1 === buffer.length) pendingCr = true;
        else if (buffer[end + 1] === '\n') end += 1;
      }
      buffer = buffer.slice(end + 1);
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line === 'data' || line.startsWith('data:')) {
        const value = line.slice(5);
        data.push(value.startsWith(' ') ? value.slice(1) : value);
      }
    }
  }
  buffer += decoder.decode();
  if (buffer.startsWith('data:')) data.push(buffer.slice(5).replace(/^ /, ''));
  if (data.length > 0) yield data.join('\n');
}
