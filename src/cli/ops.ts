import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { doctor, formatReport } from '../doctor/checks.js';
import { parseRetention } from '../retention/policy.js';
import { dataDirFor, openApp } from '../app/open.js';
import { envValue } from '../settings.js';
import { createLogger } from '../observe/log.js';

/**
 * `runledger doctor` and `runledger prune`: checking a deployment, and deleting what it no longer
 * needs. `database` resolves the --database flag against the environment.
 *
 * @example
 * runledger doctor --database postgres://db/runledger --json
 * runledger prune --older-than 30d --kind runs --dry-run
 */
export function opsCommands(
  program: Command,
  print: (line: string) => void,
  database: (flag: string | undefined) => string,
): void {
  program
    .command('doctor')
    .description(
      'check a deployment: store, migrations, clock, leases, stuck runs, subscriptions, dead letters, secret key, idle query rate (exit 1 when a check fails)',
    )
    .option(
      '-d, --database <location>',
      'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)',
    )
    .option('--json', 'print the report as JSON')
    .option('--sample <ms>', 'how long to measure the idle query rate (PostgreSQL)', '2000')
    .action(async (options) => {
      const location = database(options.database);
      const dataDir = envValue(process.env, 'RUNLEDGER_DATA_DIR') ?? dataDirFor(location);
      const secretKey = envValue(process.env, 'RUNLEDGER_SECRET_KEY');
      const publicUrl = envValue(process.env, 'RUNLEDGER_PUBLIC_URL');
      const report = await doctor({
        database: location,
        dataDir,
        sampleMs: Number(options.sample),
        ...(secretKey !== undefined ? { secretKey } : {}),
        ...(publicUrl !== undefined ? { publicUrl } : {}),
      });
      print(options.json ? JSON.stringify(report, null, 2) : formatReport(report));
      if (!report.ok) process.exitCode = 1;
    });

  program
    .command('prune')
    .description(
      'delete finished runs (whole: events, views, tasks), finished tasks and routed events older than an age; never anything live',
    )
    .option(
      '-d, --database <location>',
      'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)',
    )
    .requiredOption('--older-than <age>', 'e.g. 30d, 12h')
    .option('--kind <kinds>', 'comma-separated: runs, tasks, events, chat, keys, audit (default: all)')
    .option('--dry-run', 'count what would be deleted, delete nothing')
    .option('--batch <n>', 'records per transaction', '200')
    .action(async (options) => {
      const location = database(options.database);
      // the assembly registers what features keep per run (execution index rows) and their kinds (events);
      // nothing here decrypts a secret, so no key is read
      const app = await openApp({
        database: location,
        secretKey: randomBytes(32),
        logger: createLogger('silent', false),
        workers: false,
      });
      const engine = app.engine;
      try {
        const kinds = options.kind
          ? String(options.kind)
              .split(',')
              .map((k: string) => k.trim())
          : engine.retention.kindNames;
        const policy = parseRetention(
          kinds.map((k: string) => `${k}:${options.olderThan}`).join(','),
          engine.retention.kindNames,
        );
        const pruned = await engine.retention.prune(policy, {
          dryRun: Boolean(options.dryRun),
          batchSize: Number(options.batch),
        });
        for (const p of pruned) {
          const what =
            p.kind === 'runs'
              ? `${p.runs} runs (${p.tasks} tasks, ${p.events} events)`
              : p.kind === 'tasks'
                ? `${p.tasks} tasks (${p.events} events)`
                : p.kind === 'chat'
                  ? `${p.other} messages`
                  : `${p.other} records (${p.events} events)`;
          print(`${options.dryRun ? 'would delete' : 'deleted'} ${p.kind}: ${what}`);
        }
      } finally {
        await app.close();
      }
    });
}
