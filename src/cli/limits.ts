import type { Command } from 'commander';
import type { LimitRecord } from '../client/limits.js';
import { client, remote } from './options.js';
import type { Output } from './output.js';

/** The commands of named rate limits (docs/flow-control.md) on a running server: steps take them with `rateLimit`. */
export function limitCommands(program: Command, out: Output): void {
  const limits = program
    .command('limits')
    .description('named rate limits that steps take (units per period, shared by every process)');
  remote(limits.command('set <name>'))
    .description('create or change a named rate limit: it applies at once, in every process')
    .requiredOption('--limit <n>', 'units per period, a whole number from 1')
    .requiredOption('--period <duration>', "the period, 1s to 30d: '1s', '1m', '1h' or ms")
    .option(
      '--key <expression>',
      "one bucket per key: an expression over the run's input (input.user_id) or a constant",
    )
    .action(async (name: string, options) => {
      const { limit, period, key } = options as { limit: string; period: string; key?: string };
      const made = await client(options).setLimit({
        name,
        // as given when not a number: the server names the field
        limit: /^-?\d+(\.\d+)?$/.test(limit) ? Number(limit) : (limit as unknown as number),
        period: /^\d+$/.test(period) ? Number(period) : period,
        ...(key === undefined ? {} : { key }),
      });
      if (options.json) return out.json(made);
      out.line(`${made.name}: ${describe(made)}`);
    });
  remote(limits.command('list'))
    .description('the named rate limits, and the concurrency keys with runs in or waiting')
    .action(async (options) => {
      const { limits: all } = await client(options).limits();
      if (options.json) return out.json(all);
      out.table(
        ['NAME', 'LIMIT', 'PERIOD', 'KEY', 'UPDATED'],
        all.map((l) => [l.name, String(l.limit), period(l.period_ms), l.key ?? '-', l.updated_at]),
        'no rate limits (runledger limits set <name> --limit 100 --period 1m)',
      );
      // the concurrency keys in use, below: the same page of the dashboard (Limits) shows both
      const { concurrency, truncated } = await client(options).flow();
      out.line('');
      out.table(
        ['CONCURRENCY KEY', 'IN USE', 'WAITING', 'OLDEST WAITING SINCE'],
        concurrency.map((k) => [k.key, `${k.in_use} of ${k.limit}`, String(k.waiting), k.oldest_waiting_since ?? '-']),
        'no concurrency key has a run in or waiting',
      );
      if (truncated) out.line('(more keys are in use than shown)');
    });
  remote(limits.command('show <name>'))
    .description('one named rate limit')
    .action(async (name: string, options) => {
      const made = await client(options).limit(name);
      if (options.json) return out.json(made);
      out.line(`${made.name}: ${describe(made)}`);
    });
  remote(limits.command('delete <name>'))
    .description('delete a named rate limit and its buckets: steps naming it fail at their next take')
    .action(async (name: string, options) => {
      await client(options).deleteLimit(name);
      if (options.json) return out.json({ deleted: name });
      out.line(`deleted ${name}`);
    });
}

function period(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

function describe(l: LimitRecord): string {
  return `${l.limit} per ${period(l.period_ms)}${l.key ? `, one bucket per ${l.key}` : ''}`;
}
