import type { Command } from 'commander';
import { Client } from '../client/client.js';
import { DEFAULT_URL, json as jsonFlag, remote, urlFlags, whole } from './options.js';
import type { Output } from './output.js';

/* The API's records of the /notifications routes (server/routes/notifications.ts). */
interface NotificationRecord {
  id: string;
  name: string;
  url: string;
  events: string[];
  filter: { workflow?: string; queue?: string };
  body: unknown;
  warn_at: number;
  enabled: boolean;
  created_at: string;
  secret?: string;
}

interface DeliveryRecord {
  id: string;
  event: string;
  run_id: string | null;
  status: string;
  reason: string | null;
  attempts: Array<{ attempt: number; at: string; status: number | null; error: string | null; duration_ms: number }>;
  created_at: string;
}

const enc = encodeURIComponent;

/** The client, with the notifications' routes. */
class NotificationClient extends Client {
  create = (body: unknown) => this.call<NotificationRecord>('POST', '/notifications', body);
  list = () => this.call<{ notifications: NotificationRecord[] }>('GET', '/notifications');
  get = (id: string) => this.call<NotificationRecord>('GET', `/notifications/${enc(id)}`);
  remove = (id: string) => this.call<null>('DELETE', `/notifications/${enc(id)}`);
  test = (id: string) => this.call<DeliveryRecord>('POST', `/notifications/${enc(id)}/test`);
  deliveries = (id: string, limit: number) =>
    this.call<{ deliveries: DeliveryRecord[]; next: string | null }>(
      'GET',
      `/notifications/${enc(id)}/deliveries?limit=${limit}`,
    );
}

function notificationClient(options: { url?: string; token?: string }): NotificationClient {
  return new NotificationClient({
    url: options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
    token: options.token ?? (process.env.RUNLEDGER_TOKEN || undefined),
  });
}

/** The commands of notifications (docs/notifications.md): outbound webhooks fed by the journal, on a running server. */
export function notificationCommands(program: Command, out: Output): void {
  const notifications = program
    .command('notifications')
    .description('outbound webhooks: a run failed or succeeded, an approval waiting, a dead task, a timeout near');
  remote(notifications.command('create <name> <url>'))
    .description('create a notification; its signing secret is printed once')
    .requiredOption(
      '--event <type...>',
      'run.failed, run.succeeded, approval.waiting, task.dead, run.timeout_warning (one or more)',
    )
    .option('--workflow <name>', 'only events of runs of this workflow')
    .option('--queue <name>', 'only dead tasks of this queue')
    .option('--body <json>', 'the payload: a JSON template reading {{event.*}} and {{run.*}}')
    .option('--warn-at <share>', "run.timeout_warning: the share of a run's timeout, between 0 and 1 (default 0.8)")
    .action(async (name: string, url: string, options) => {
      const filter = {
        ...(options.workflow ? { workflow: options.workflow } : {}),
        ...(options.queue ? { queue: options.queue } : {}),
      };
      const created = await notificationClient(options).create({
        name,
        url,
        events: options.event,
        ...(Object.keys(filter).length > 0 ? { filter } : {}),
        ...(options.body === undefined ? {} : { body: jsonFlag('--body', options.body) }),
        ...(options.warnAt === undefined ? {} : { warn_at: Number(options.warnAt) }),
      });
      if (options.json) return out.json(created);
      out.line(`created ${created.id} (${created.name}) → ${created.url} on ${created.events.join(', ')}`);
      out.line(`secret: ${created.secret}  (shown once: the receiver verifies runledger-signature with it)`);
      out.line(`send a test event:  runledger notifications test ${created.id}${urlFlags(options)}`);
    });
  remote(notifications.command('list'))
    .description('the notifications')
    .action(async (options) => {
      const { notifications: all } = await notificationClient(options).list();
      if (options.json) return out.json(all);
      out.table(
        ['ID', 'NAME', 'EVENTS', 'URL', 'ENABLED'],
        all.map((n) => [n.id, n.name, n.events.join(','), n.url, n.enabled ? 'yes' : 'no']),
        'no notifications (runledger notifications create <name> <url> --event run.failed)',
      );
    });
  remote(notifications.command('deliveries <id>'))
    .description("a notification's deliveries, newest first, with each attempt's time, status and error")
    .option('--limit <n>', 'how many (default 20)')
    .action(async (id: string, options) => {
      const limit = options.limit === undefined ? 20 : whole('--limit', options.limit, 1, 200);
      const { deliveries } = await notificationClient(options).deliveries(id, limit);
      if (options.json) return out.json(deliveries);
      if (deliveries.length === 0) return out.line('no deliveries yet');
      for (const d of deliveries) {
        out.line(`${d.id}  ${d.event}  ${d.status}${d.run_id ? `  run ${d.run_id}` : ''}  ${d.created_at}`);
        if (d.reason) out.line(`  ${d.reason}`);
        for (const a of d.attempts)
          out.line(
            `  #${a.attempt} ${a.at}  ${a.status ?? 'no answer'}  ${a.duration_ms} ms${a.error ? `  ${a.error}` : ''}`,
          );
      }
    });
  remote(notifications.command('test <id>'))
    .description('send a notification.test event now, once, and show how the receiver answered')
    .action(async (id: string, options) => {
      const d = await notificationClient(options).test(id);
      if (options.json) return out.json(d);
      const a = d.attempts[0];
      out.line(`${d.id}: ${d.status}${a ? ` (${a.status ?? 'no answer'}${a.error ? `: ${a.error}` : ''})` : ''}`);
      if (d.status !== 'delivered') process.exitCode = 1;
    });
  remote(notifications.command('delete <id>'))
    .description('delete a notification: its deliveries not yet sent are skipped')
    .action(async (id: string, options) => {
      await notificationClient(options).remove(id);
      if (options.json) return out.json({ deleted: id });
      out.line(`deleted ${id}`);
    });
}
