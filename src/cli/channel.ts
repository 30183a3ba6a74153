import type { Command } from 'commander';
import { WebSocket } from 'ws';
import type { Message } from '../chat/message.js';
import { api, client } from './api.js';

/** `runledger channel watch|post`: live chat from the terminal, through a running server. */
export function channelCommands(program: Command, print: (line: string) => void): void {
  const channel = program.command('channel').description('chat channels on a running server');

  api(channel.command('watch <channel-id>'))
    .description('print the messages after --after, then each new one (and AI replies as they are written) until Ctrl-C')
    .option('--after <seq>', 'start after this seq', '0')
    .action(async (channelId: string, options) => {
      const c = client(options);
      let after = Number(options.after);
      let streaming = false;
      // reconnects from the last seq it printed: nothing missed, nothing twice
      for (;;) {
        const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
          const ws = new WebSocket(c.channelSocket(channelId, after));
          ws.on('message', (data) => {
            const frame = JSON.parse(data.toString());
            if (frame.type === 'delta') {
              if (!streaming) process.stdout.write(`       ai (typing) `);
              streaming = true;
              process.stdout.write(frame.delta);
            } else if (frame.type === 'message') {
              if (streaming) process.stdout.write('\n');
              streaming = false;
              const m = frame.message as Message;
              after = m.seq;
              print(`#${String(m.seq).padEnd(5)} ${m.role.padEnd(6)} ${m.sender_id}: ${m.content}`);
            }
          });
          ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
          ws.on('error', (error) => print(`connection failed: ${error.message}`));
          process.once('SIGINT', () => ws.close(1000));
        });
        if (closed.code === 1000) return;
        print(`(disconnected: ${closed.code} ${closed.reason}; reconnecting after #${after})`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    });

  api(channel.command('post <channel-id> <text>'))
    .description('post a message (role user, so the AI reply worker answers it)')
    .option('--role <role>', 'user | ai | system', 'user')
    .option('--sender <id>', 'sender_id', 'cli')
    .option('--event-id <id>', 'idempotency key: the same id again posts nothing new')
    .action(async (channelId: string, text: string, options) => {
      const body = { sender_id: options.sender, role: options.role, content: text, ...(options.eventId ? { event_id: options.eventId } : {}) };
      const message = await client(options).postMessage(channelId, body);
      print(`#${message.seq} in ${channelId} (event_id ${message.event_id}; posting it again changes nothing)`);
    });
}
