import type { Command } from 'commander';
import type { TaskRecord } from '../client/client.js';
import { oneOf, whole } from './options.js';
import { plural, type Output } from './output.js';
import { reader, withSource } from './read.js';
import { timelineLine } from './timeline.js';

const STATES = ['ready', 'running', 'completed', 'dead'] as const;

/** `runledger status`, `tasks list|history|redrive`, `dlq list|redrive`, `subscriptions`. */
export function taskCommands(program: Command, out: Output): void {
  reader(program.command('status'))
    .description("the store's health: dialect, location, schema version, event and task counts")
    .action((options) =>
      withSource(options, async (source) => {
        const status = await source.status();
        if (options.json) return out.json(status);
        out.line(`${status.dialect} ${status.location}, schema version ${status.schemaVersion}`);
        out.line(
          `${plural(status.events, 'event')} in ${plural(status.streams, 'stream')}, ${plural(status.subscriptions, 'subscription')}`,
        );
        out.line(
          `tasks: ${Object.entries(status.tasks)
            .map(([state, n]) => `${n} ${out.status(state)}`)
            .join(', ')}`,
        );
      }),
    );

  const tasks = program.command('tasks').description('tasks of the queues: list, history, redrive');
  const list = (cmd: Command, fixed?: 'dead') =>
    reader(cmd)
      .option('--queue <name>', 'one queue only')
      .option('--limit <n>', 'at most this many', '100')
      .action((options) =>
        withSource(options, async (source) => {
          const limit = whole('--limit', options.limit, 1, 500);
          const state = fixed ?? (options.state === undefined ? undefined : oneOf('--state', options.state, STATES));
          const found = await source.tasks({
            limit,
            ...(options.queue ? { queue: options.queue } : {}),
            ...(state ? { state } : {}),
          });
          if (options.json) return out.json(found);
          out.table(
            ['ID', 'QUEUE', 'STATE', 'ATTEMPTS', 'LAST ERROR'],
            found.map((t) => row(t, out)),
            state === 'dead' ? 'no dead tasks' : state ? `no ${state} tasks` : 'no tasks',
          );
        }),
      );
  list(tasks.command('list').description('tasks in id order').option('--state <state>', STATES.join(' | ')));
  reader(tasks.command('history <task-id>'))
    .description("a task's attempts and outcome")
    .action((id: string, options) =>
      withSource(options, async (source) => {
        const events = await source.taskEvents(id);
        if (options.json) return out.json(events);
        for (const e of events) out.line(timelineLine(e));
      }),
    );
  const redrive = (cmd: Command) =>
    reader(cmd)
      .description('put a dead task back in its queue with fresh attempts')
      .action((id: string, options) =>
        withSource(options, async (source) => {
          const result = await source.redrive(id);
          if (options.json) return out.json(result);
          out.line(
            result.redriven
              ? `redriven ${id}: ${out.status(result.state)}`
              : `${id} is not dead (${out.status(result.state)}): unchanged`,
          );
        }),
      );
  redrive(tasks.command('redrive <task-id>'));

  const dlq = program.command('dlq').description('the dead-letter queue: tasks that failed for good');
  list(dlq.command('list').description('dead tasks with their last error'), 'dead');
  redrive(dlq.command('redrive <task-id>'));

  reader(program.command('subscriptions'))
    .description('durable subscriptions with their cursor and parked events')
    .action((options) =>
      withSource(options, async (source) => {
        const subs = await source.subscriptions();
        if (options.json) return out.json(subs);
        out.table(
          ['NAME', 'CURSOR', 'STATE', 'PARKED'],
          subs.map((s) => [
            s.name,
            s.cursor || '(start)',
            s.blocked_reason ? `blocked: ${s.blocked_reason}` : 'flowing',
            String(s.parked),
          ]),
          'no subscriptions',
        );
      }),
    );
}

function row(t: TaskRecord, out: Output): string[] {
  return [t.id, t.queue, out.status(t.state), `${t.attempts}/${t.max_attempts}`, t.last_error ?? ''];
}
