import type { Command } from 'commander';
import { userInfo } from 'node:os';
import { createEngine, type Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import type { BulkResult, RunFilter } from '../runtime/operator.js';
import type { RunStatus } from '../runtime/view.js';

const DATABASE = ['-d, --database <location>', 'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)'] as const;
const BY = ['--by <who>', 'who acts, journaled (default: the login name)'] as const;
const REASON = ['--reason <why>', 'why, journaled (required)'] as const;

function database(flag: string | undefined): string {
  return flag ?? process.env.RUNLEDGER_DATABASE ?? process.env.RUNLEDGER_DB ?? process.env.DATABASE_URL ?? 'runledger.db';
}

function actor(options: { by?: string; reason?: string }): { by: string; reason: string } {
  if (!options.reason) throw new ValidationError('--reason', 'say why: it is journaled with the action');
  return { by: options.by ?? process.env.USER ?? userInfo().username, reason: options.reason };
}

function time(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new ValidationError(flag, `must be an ISO 8601 time (got '${value}')`);
  return ms;
}

function kind(value: string): 'workflow' | 'queue' {
  if (value !== 'workflow' && value !== 'queue') throw new ValidationError('kind', `must be 'workflow' or 'queue' (got '${value}')`);
  return value;
}

async function withEngine<T>(flag: string | undefined, fn: (engine: Engine) => Promise<T>): Promise<T> {
  const engine = await createEngine({ database: database(flag), workers: false });
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/**
 * `runledger pause|resume workflow|queue <name>`, `runledger pauses`, and `runledger bulk
 * cancel|retry|redrive` by filter: each action journaled with who (`--by`) and why (`--reason`).
 */
export function operatorCommands(program: Command, print: (line: string) => void): void {
  for (const verb of ['pause', 'resume'] as const) {
    program
      .command(`${verb} <kind> <name>`)
      .description(verb === 'pause' ? 'pause a workflow (its runs start no new step; running steps finish) or a queue (none of its tasks is claimed)' : 'resume a paused workflow or queue')
      .option(...DATABASE).option(...BY).option(...REASON)
      .action(async (k: string, name: string, options) => {
        const who = actor(options);
        await withEngine(options.database, async (engine) => {
          const done = verb === 'pause' ? (await engine.operator.pause(kind(k), name, who)).paused : (await engine.operator.resume(kind(k), name, who)).resumed;
          print(done ? `${k} ${name} ${verb === 'pause' ? 'paused' : 'resumed'}` : `${k} ${name} was ${verb === 'pause' ? 'already paused' : 'not paused'}`);
        });
      });
  }
  program
    .command('pauses')
    .description('what is paused, by whom and why')
    .option(...DATABASE)
    .action(async (options) => {
      await withEngine(options.database, async (engine) => {
        const pauses = await engine.operator.pauses();
        if (pauses.length === 0) print('nothing is paused');
        for (const p of pauses) print(`${p.kind.padEnd(8)}  ${p.name}  by ${p.pausedBy} at ${new Date(p.createdAt).toISOString()}: ${p.reason}`);
      });
    });

  const bulk = program.command('bulk').description('act on every run or dead task a filter matches (journaled with who and why)');
  const report = (result: BulkResult & { started?: Record<string, string> }) => {
    for (const id of result.ids) print(result.started?.[id] ? `${id} → ${result.started[id]}` : id);
    for (const s of result.skipped) print(`${s.id} skipped: ${s.why}`);
    print(`${result.dryRun ? 'would act on' : result.action}: ${result.ids.length}`);
  };
  for (const verb of ['cancel', 'retry'] as const) {
    bulk
      .command(verb)
      .description(verb === 'cancel' ? 'cancel the runs that match and have not ended' : 'start again the failed or cancelled runs that match')
      .option(...DATABASE).option(...BY).option(...REASON)
      .option('--status <status>', 'one run status or several, comma-separated')
      .option('--workflow <name>', "the workflow's name")
      .option('--created-after <time>', 'ISO 8601').option('--created-before <time>', 'ISO 8601')
      .option('--dry-run', 'list what would be acted on, change nothing')
      .action(async (options) => {
        const who = actor(options);
        const filter: RunFilter = {
          ...(options.status ? { status: String(options.status).split(',').map((s) => s.trim()) as RunStatus[] } : {}),
          ...(options.workflow ? { workflow: options.workflow } : {}),
          ...(options.createdAfter ? { createdAfter: time('--created-after', options.createdAfter)! } : {}),
          ...(options.createdBefore ? { createdBefore: time('--created-before', options.createdBefore)! } : {}),
        };
        await withEngine(options.database, async (engine) => {
          const run = verb === 'cancel' ? engine.operator.cancelRuns.bind(engine.operator) : engine.operator.retryRuns.bind(engine.operator);
          report(await run(filter, who, { dryRun: Boolean(options.dryRun) }));
        });
      });
  }
  bulk
    .command('redrive')
    .description('redrive the dead tasks that match')
    .option(...DATABASE).option(...BY).option(...REASON)
    .option('--queue <name>').option('--dead-after <time>', 'ISO 8601').option('--dead-before <time>', 'ISO 8601')
    .option('--dry-run', 'list what would be redriven, change nothing')
    .action(async (options) => {
      const who = actor(options);
      const filter = {
        ...(options.queue ? { queue: options.queue } : {}),
        ...(options.deadAfter ? { updatedAfter: time('--dead-after', options.deadAfter)! } : {}),
        ...(options.deadBefore ? { updatedBefore: time('--dead-before', options.deadBefore)! } : {}),
      };
      await withEngine(options.database, async (engine) => report(await engine.operator.redriveTasks(filter, who, { dryRun: Boolean(options.dryRun) })));
    });
}
