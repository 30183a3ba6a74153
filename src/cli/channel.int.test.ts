import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { watch } from './channel.js';
import { output } from './output.js';

describe('runledger channel watch', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('stops with exit code 1 and a message when the server refuses the token, leaving no SIGINT listener behind', async () => {
    let upgrades = 0;
    server = createServer();
    server.on('upgrade', (_request, socket) => {
      upgrades++;
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n');
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let text = '';
    const before = process.listenerCount('SIGINT');
    const code = await watch(
      (channel, after) => `${url.replace('http', 'ws')}/channels/${channel}/ws?after=${after}`,
      'general',
      0,
      output((t) => (text += t), false),
      url,
    );
    expect(code).toBe(1);
    expect(upgrades).toBe(1);
    expect(text).toBe(`${url} refused the token (401): set --token or $RUNLEDGER_TOKEN\n`);
    expect(process.listenerCount('SIGINT')).toBe(before);
  });
});
