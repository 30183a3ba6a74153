import { WebSocket } from 'ws';
import type { Message } from '../chat/message.js';

/**
 * A real `ws` client of a server's `/channels/{id}/ws`, recording the messages and frames it
 * receives, for tests.
 *
 * @example const c = watch(server.url, 'general'); await c.open; … expect(c.seqs()).toEqual([1, 2]);
 */
export function watch(url: string, channel: string, after = 0, query = '') {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/channels/${channel}/ws?after=${after}${query}`);
  const messages: Message[] = [];
  const frames: { type: string }[] = [];
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    frames.push(frame);
    if (frame.type === 'message') messages.push(frame.message);
  });
  const open = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return { ws, messages, frames, open, closed, seqs: () => messages.map((m) => m.seq) };
}

/** The HTTP status and body a server answers a WebSocket upgrade it refuses with. */
export function refusal(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'));
    ws.once('open', () => reject(new Error(`${url} accepted the upgrade`)));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', () => {});
  });
}
