import type { Command } from 'commander';
import { ValidationError } from '../errors.js';
import { client, remote, whole } from './options.js';
import type { Output } from './output.js';

/** `runledger queues limit <queue>`: a queue's limit of running tasks across every worker (PUT/GET /queues/{q}/limit). */
export function queueCommands(program: Command, out: Output): void {
  const queues = program.command('queues').description("the task queues' limits of running tasks");
  remote(queues.command('limit <queue>'))
    .description(
      'show the most tasks of a queue that run at once across every worker; --limit sets it, --remove removes it (no restart)',
    )
    .option('--limit <n>', 'at most this many tasks of the queue run at once (1 to 1000000)')
    .option('--remove', 'remove the limit: the workers alone decide how many run')
    .action(async (queue: string, options) => {
      if (options.limit !== undefined && options.remove)
        throw new ValidationError('--remove', 'sets no limit: give --limit <n> or --remove, not both');
      const c = client(options);
      const answer =
        options.limit !== undefined
          ? await c.setQueueLimit(queue, whole('--limit', options.limit, 1, 1_000_000))
          : options.remove
            ? await c.setQueueLimit(queue, null)
            : await c.queueLimit(queue);
      if (options.json) return out.json(answer);
      out.line(
        answer.concurrency === null
          ? `${answer.queue}: no limit`
          : `${answer.queue}: at most ${answer.concurrency} running at once, across every worker`,
      );
    });
}
