import type { Command } from 'commander';
import { WebSocket } from 'ws';
import { backoffDelay } from '../backoff.js';
import type { Message } from '../chat/message.js';
import { client, DEFAULT_URL, remote, whole } from './options.js';
import type { Output } from './output.js';

/** Reconnects after 0.5 s, doubling to 15 s while the server stays away. */
const RECONNECT = { baseMs: 500, factor: 2, maxMs: 15_000, jitter: 0.2 };

/** `runledger channel watch|post`: live chat from the terminal, through a running server. */
export function channelCommands(program: Command, out: Output): void {
  const channel = program.command('channel').description('chat channels on a running server: watch, post');

  remote(channel.command('watch <channel-id>'))
    .description(
      'print the messages after --after, then each new one (and AI replies as they are written) until Ctrl-C; --json: one message per line',
    )
    .option('--after <seq>', 'start after this seq', '0')
    .action(async (channelId: string, options) => {
      const after = whole('--after', options.after, 0);
      const c = client(options);
      process.exitCode = await watch(
        c.channelSocket,
        channelId,
        after,
        out,
        options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
        Boolean(options.json),
      );
    });

  remote(channel.command('post <channel-id> <text>'))
    .description('post a message (role user, so the AI reply worker answers it)')
    .option('--role <role>', 'user | ai | system', 'user')
    .option('--sender <id>', 'sender_id', 'cli')
    .option('--event-id <id>', 'idempotency key: the same id again posts nothing new')
    .action(async (channelId: string, text: string, options) => {
      const body = {
        sender_id: options.sender,
        role: options.role,
        content: text,
        ...(options.eventId ? { event_id: options.eventId } : {}),
      };
      const message = await client(options).postMessage(channelId, body);
      if (options.json) return out.json(message);
      out.line(`#${message.seq} in ${channelId} (event_id ${message.event_id}; posting it again changes nothing)`);
    });
}

/**
 * Watches a channel until Ctrl-C (exit code 0), or until the server refuses the token (1).
 * Reconnects from the last seq it printed — nothing missed, nothing twice — backing off while the
 * server is away. One SIGINT listener for the whole watch, removed when it ends.
 */
export async function watch(
  socketUrl: (channel: string, after: number) => string,
  channelId: string,
  after: number,
  out: Output,
  url = 'the server',
  asJson = false,
): Promise<number> {
  let stopped = false;
  let current: WebSocket | null = null;
  let wakeSleep: (() => void) | null = null;
  const stop = () => {
    stopped = true;
    current?.close(1000);
    wakeSleep?.();
  };
  process.on('SIGINT', stop);
  try {
    let streaming = false;
    for (let failures = 0; !stopped; ) {
      const closed = await new Promise<{ code: number; reason: string; refused?: number; opened: boolean }>(
        (resolve) => {
          const ws = new WebSocket(socketUrl(channelId, after));
          current = ws;
          let refused: number | undefined;
          let opened = false;
          ws.on('open', () => {
            opened = true;
            if (failures > 0) out.line(`(connected again, after #${after})`);
            failures = 0;
          });
          ws.on('unexpected-response', (_req, res) => {
            refused = res.statusCode;
            res.resume();
            ws.terminate();
          });
          ws.on('message', (data) => {
            const frame = JSON.parse(data.toString());
            if (asJson) {
              // one message per line, for scripts; typing deltas are not messages
              if (frame.type === 'message') {
                after = (frame.message as Message).seq;
                out.line(JSON.stringify(frame.message));
              }
            } else if (frame.type === 'delta') {
              if (!streaming) process.stdout.write(`       ai (typing) `);
              streaming = true;
              process.stdout.write(frame.delta);
            } else if (frame.type === 'message') {
              if (streaming) process.stdout.write('\n');
              streaming = false;
              const m = frame.message as Message;
              after = m.seq;
              out.line(`#${String(m.seq).padEnd(5)} ${m.role.padEnd(6)} ${m.sender_id}: ${m.content}`);
            }
          });
          ws.on('error', () => {});
          ws.on('close', (code, reason) =>
            resolve({ code, reason: reason.toString(), opened, ...(refused !== undefined ? { refused } : {}) }),
          );
        },
      );
      current = null;
      if (stopped) break;
      if (closed.refused === 401 || closed.refused === 403) {
        out.line(`${url} refused the token (${closed.refused}): set --token or $RUNLEDGER_TOKEN`);
        return 1;
      }
      if (closed.refused === 404) {
        out.line(`${url} has no channel socket here (404): is it a runledger server?`);
        return 1;
      }
      failures = closed.opened ? 1 : failures + 1;
      const delay = backoffDelay(failures, RECONNECT);
      out.line(
        closed.opened
          ? `(disconnected: ${closed.code} ${closed.reason}; reconnecting after #${after})`
          : `(cannot reach ${url}${closed.refused ? ` (${closed.refused})` : ''}; trying again in ${(delay / 1000).toFixed(1)} s — is \`runledger serve\` running?)`,
      );
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        wakeSleep = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wakeSleep = null;
    }
    return 0;
  } finally {
    process.off('SIGINT', stop);
  }
}
