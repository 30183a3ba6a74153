import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EventView } from '../triggers/events.js';
import { client, json, remote, whole } from './options.js';

/**
 * `runledger trigger`: sends one event to a running server (`POST /events`), prints its id, then
 * waits up to `--wait` ms for the routing subscription and prints the runs it started.
 *
 * @example
 * runledger trigger --source manual-trigger --detail-type execute-agent --detail '{"prompt":"hi"}'
 * // event evt_01J… stored
 * // rule run-agent (rule_01J…) → session ses_… started
 */
export function triggerCommands(program: Command, print: (line: string) => void): void {
  remote(program.command('trigger'))
    .description('send an event to the server; print its id and the runs the rules it matched started')
    .requiredOption('--source <source>', 'the event source, e.g. manual-trigger')
    .requiredOption('--detail-type <type>', 'the event detail-type, e.g. execute-agent')
    .option('--detail <json>', 'the event detail, a JSON object', '{}')
    .option('--id <id>', 'the event id: sending the same id again starts nothing new (default: a new evt_… id)')
    .option('--wait <ms>', 'how long to wait for routing before giving up on showing the runs', '5000')
    .action(async (options) => {
      const detail = json('--detail', options.detail);
      const waitMs = whole('--wait', options.wait, 0, 600_000);
      const c = client(options);
      const stored = await c.sendEvent({
        source: options.source,
        'detail-type': options.detailType,
        detail,
        ...(options.id ? { id: options.id } : {}),
      });
      if (!options.json)
        print(
          stored.duplicate ? `event ${stored.id} was stored before: nothing new started` : `event ${stored.id} stored`,
        );
      const deadline = Date.now() + waitMs;
      let event: EventView = stored;
      while (!event.routed && Date.now() < deadline) {
        await sleep(100);
        event = await c.event(stored.id);
      }
      if (options.json) return print(JSON.stringify({ ...event, duplicate: stored.duplicate }, null, 2));
      if (!event.routed) {
        print(
          `not routed within ${options.wait} ms (is a server with the routing subscription running?): see GET /events/${stored.id}`,
        );
        return;
      }
      if (event.matches.length === 0) print('no rule matched');
      for (const m of event.matches) {
        print(
          m.run_id
            ? `rule ${m.rule_name} (${m.rule_id}) → ${m.kind} ${m.run_id} started`
            : `rule ${m.rule_name} (${m.rule_id}) matched but could not start: ${m.error}`,
        );
      }
    });
}
