import type { Command } from 'commander';
import { startMockServices, type MockCall } from '../mock-services/index.js';

/**
 * `runledger mock-services`: the three services of brief 004 (intake, layout, render) on one port,
 * with fault knobs and a call log (docs/mock-services.md), until SIGINT or SIGTERM.
 *
 * @example
 * runledger mock-services --port 9090 --speed 10
 * // mock services listening on http://127.0.0.1:9090 (speed 10, seed 1234)
 * //   POST   /v1/intake/sessions  create a session …
 */
export function mockServicesCommands(program: Command, print: (line: string) => void): void {
  program
    .command('mock-services')
    .description(
      'run mock Content Intake, Gestalt layout and Document Formatter services (brief 004) with fault knobs, until SIGINT or SIGTERM',
    )
    .option('--port <port>', 'port (0: any free one)', '9090')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--speed <factor>', 'time factor: 10 makes every delay ten times shorter', '1')
    .option('--seed <n>', 'ids, delays and layouts follow from it (default: random, printed)')
    .option('--quiet', 'do not print each call')
    .action(async (options) => {
      const port = Number(options.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`--port must be an integer from 0 to 65535, got ${options.port}`);
      const onCall = options.quiet ? undefined : (call: MockCall) => print(formatCall(call));
      const mock = await startMockServices({
        port,
        host: options.host,
        speed: Number(options.speed),
        ...(options.seed !== undefined ? { seed: Number(options.seed) } : {}),
        ...(onCall ? { onCall } : {}),
      });
      const stopped = new Promise((stop) => {
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      print(`mock services listening on ${mock.url} (speed ${mock.speed}, seed ${mock.seed})`);
      for (const e of mock.endpoints) print(`  ${e.method.padEnd(6)} ${e.path.padEnd(44)} ${e.summary}`);
      print(
        '  control: GET / · GET|POST|PUT|DELETE /_faults · GET|DELETE /_calls · GET /_callbacks · POST /_reset (docs/mock-services.md)',
      );
      await stopped;
      await mock.close();
      print('mock services: stopped');
    });
}

/** `05:17:29.123 POST /v1/layout/proposals → 503  key=k1 fault-1` */
function formatCall(call: MockCall): string {
  const answer = call.dropped ? 'dropped' : String(call.status);
  const notes = [
    call.idempotency_key ? `key=${call.idempotency_key}` : '',
    call.fault ?? '',
    call.replayed ? 'replayed' : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${call.at.slice(11, 23)} ${call.method} ${call.path} → ${answer}${notes ? `  ${notes}` : ''}`;
}
