import { connect } from 'node:net';

/**
 * A raw client: sends `head` at once, then `drip` one byte a second, like a slow attacker. Resolves
 * with what the server answered and when it closed the connection; gives up after `giveUpMs`.
 */
export function slowClient(
  url: string,
  head: string,
  drip: string,
  giveUpMs = 8_000,
): Promise<{ answer: string; closedAfterMs: number | null }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect({ host: hostname, port: Number(port) });
    let answer = '';
    let sent = 0;
    const timer = setInterval(() => sent < drip.length && !socket.destroyed && socket.write(drip[sent++]!), 1_000);
    const giveUp = setTimeout(() => finish(null), giveUpMs);
    function finish(closedAfterMs: number | null) {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ answer, closedAfterMs });
    }
    socket.on('data', (chunk) => (answer += chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(Date.now() - started));
    socket.write(head);
  });
}

/** The head of a JSON POST of `length` bytes to `path`, over HTTP/1.1. */
export const postHead = (url: string, path: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: ${new URL(url).host}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
