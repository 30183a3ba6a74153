import type { Command } from 'commander';
import { userInfo } from 'node:os';
import { randomBytes } from 'node:crypto';
import { openApp } from '../app/open.js';
import { ValidationError } from '../errors.js';
import { iso } from '../iso.js';
import type { Actor, BulkResult, PauseKind, RunFilter, TaskFilter } from '../runtime/operate/operator.js';
import { currentStatus, type RunStatus } from '../runtime/read/view.js';
import { createLogger } from '../observe/log.js';
import { client, database, databaseOf, direct, existingDatabase, remote } from './options.js';

/** What the operator commands do, to the database directly or through a server. */
interface Operations {
  pause(kind: PauseKind, name: string, who: Actor): Promise<boolean>;
  resume(kind: PauseKind, name: string, who: Actor): Promise<boolean>;
  pauses(): Promise<Array<{ kind: string; name: string; by: string; reason: string; at: string }>>;
  bulk(
    action: 'cancel' | 'retry' | 'redrive',
    filter: RunFilter | TaskFilter,
    who: Actor,
    dryRun: boolean,
  ): Promise<BulkResult & { started?: Record<string, string> }>;
  close(): Promise<void>;
}

async function operations(options: Record<string, any>): Promise<Operations> {
  if (direct(options)) {
    // assembled, as `prune` opens it: a feature's retry route is registered by it (an agent run's: its event's
    // redrive); nothing here decrypts a secret, so no key is read
    const app = await openApp({
      database: existingDatabase(databaseOf(options)),
      secretKey: randomBytes(32),
      logger: createLogger('silent', false),
      workers: false,
    });
    const op = app.engine.operator;
    return {
      pause: async (kind, name, who) => (await op.pause(kind, name, who)).paused,
      resume: async (kind, name, who) => (await op.resume(kind, name, who)).resumed,
      pauses: async () =>
        (await op.pauses()).map((p) => ({
          kind: p.kind,
          name: p.name,
          by: p.pausedBy,
          reason: p.reason,
          at: new Date(p.createdAt).toISOString(),
        })),
      bulk: (action, filter, who, dryRun) =>
        action === 'cancel'
          ? op.cancelRuns(filter as RunFilter, who, { dryRun })
          : action === 'retry'
            ? op.retryRuns(filter as RunFilter, who, { dryRun })
            : op.redriveTasks(filter as TaskFilter, who, { dryRun }),
      close: () => app.close(),
    };
  }
  const c = client(options);
  return {
    pause: async (kind, name, who) => (await c.operator<{ paused: boolean }>('pause', { kind, name, ...who })).paused,
    resume: async (kind, name, who) =>
      (await c.operator<{ resumed: boolean }>('resume', { kind, name, ...who })).resumed,
    pauses: async () =>
      (await c.pauses()).pauses.map((p) => ({
        kind: p.kind,
        name: p.name,
        by: p.paused_by,
        reason: p.reason,
        at: p.paused_at,
      })),
    async bulk(action, filter, who, dryRun) {
      const f = filter as RunFilter & TaskFilter;
      const body =
        action === 'redrive'
          ? { queue: f.queue, dead_after: iso(f.updatedAfter), dead_before: iso(f.updatedBefore) }
          : {
              status: f.status,
              workflow: f.workflow,
              created_after: iso(f.createdAfter),
              created_before: iso(f.createdBefore),
            };
      const path = action === 'redrive' ? 'tasks/redrive' : action === 'cancel' ? 'runs/cancel' : 'runs/retry';
      const r = await c.operator<{
        action: string;
        ids: string[];
        skipped: Array<{ id: string; why: string }>;
        dry_run: boolean;
        started?: Record<string, string>;
      }>(path, { ...JSON.parse(JSON.stringify(body)), ...who, dry_run: dryRun });
      return {
        action: r.action,
        ids: r.ids,
        skipped: r.skipped,
        dryRun: r.dry_run,
        ...(r.started ? { started: r.started } : {}),
      };
    },
    close: async () => {},
  };
}

function actor(options: { by?: string; reason?: string }): Actor {
  if (!options.reason) throw new ValidationError('--reason', 'say why: it is journaled with the action');
  return { by: options.by ?? userInfo().username, reason: options.reason };
}

function time(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new ValidationError(flag, `must be an ISO 8601 time (got '${value}')`);
  return ms;
}

function kindOf(value: string): PauseKind {
  if (value !== 'workflow' && value !== 'queue')
    throw new ValidationError('kind', `must be 'workflow' or 'queue' (got '${value}')`);
  return value;
}

async function using<T>(options: Record<string, any>, fn: (ops: Operations) => Promise<T>): Promise<T> {
  const ops = await operations(options);
  try {
    return await fn(ops);
  } finally {
    await ops.close();
  }
}

/** Through the server (`--url`), or the database itself with `--database`. */
const target = (cmd: Command) =>
  database(remote(cmd), 'act on this database directly instead of through a server')
    .option('--by <who>', 'who acts, journaled (default: the login name)')
    .option('--reason <why>', 'why, journaled (required)');

/**
 * `runledger pause|resume workflow|queue <name>`, `runledger pauses`, and `runledger bulk
 * cancel|retry|redrive` by filter: each action journaled with who (`--by`) and why (`--reason`).
 */
export function operatorCommands(program: Command, print: (line: string) => void): void {
  for (const verb of ['pause', 'resume'] as const) {
    target(program.command(`${verb} <kind> <name>`))
      .description(
        verb === 'pause'
          ? 'pause a workflow (its runs start no new step; running steps finish) or a queue (none of its tasks is claimed)'
          : 'resume a paused workflow or queue',
      )
      .action(async (kind: string, name: string, options) => {
        const who = actor(options);
        await using(options, async (ops) => {
          const done =
            verb === 'pause' ? await ops.pause(kindOf(kind), name, who) : await ops.resume(kindOf(kind), name, who);
          if (options.json)
            return print(JSON.stringify({ kind, name, [verb === 'pause' ? 'paused' : 'resumed']: done }));
          print(
            done
              ? `${kind} ${name} ${verb === 'pause' ? 'paused' : 'resumed'}`
              : `${kind} ${name} was ${verb === 'pause' ? 'already paused' : 'not paused'}`,
          );
        });
      });
  }
  database(remote(program.command('pauses')), 'read this database directly instead of a server')
    .description('what is paused, by whom and why')
    .action(async (options) => {
      await using(options, async (ops) => {
        const pauses = await ops.pauses();
        if (options.json) return print(JSON.stringify(pauses));
        if (pauses.length === 0) print('nothing is paused');
        for (const p of pauses) print(`${p.kind.padEnd(8)}  ${p.name}  by ${p.by} at ${p.at}: ${p.reason}`);
      });
    });

  const bulk = program
    .command('bulk')
    .description('act on every run or dead task a filter matches (journaled with who and why)');
  const report = (result: BulkResult & { started?: Record<string, string> }, json: boolean) => {
    if (json) return print(JSON.stringify(result));
    for (const id of result.ids) print(result.started?.[id] ? `${id} → ${result.started[id]}` : id);
    for (const s of result.skipped) print(`${s.id} skipped: ${s.why}`);
    print(`${result.dryRun ? 'would act on' : result.action}: ${result.ids.length}`);
  };
  for (const verb of ['cancel', 'retry'] as const) {
    target(bulk.command(verb))
      .description(
        verb === 'cancel'
          ? 'cancel the runs that match and have not ended'
          : 'start again the failed or cancelled runs that match',
      )
      .option('--status <status>', 'one run status or several, comma-separated')
      .option('--workflow <name>', "the workflow's name")
      .option('--created-after <time>', 'ISO 8601')
      .option('--created-before <time>', 'ISO 8601')
      .option('--dry-run', 'list what would be acted on, change nothing')
      .action(async (options) => {
        const who = actor(options);
        const filter: RunFilter = {
          ...(options.status
            ? {
                status: String(options.status)
                  .split(',')
                  .map((s) => currentStatus(s.trim())) as RunStatus[],
              }
            : {}),
          ...(options.workflow ? { workflow: options.workflow } : {}),
          ...(options.createdAfter ? { createdAfter: time('--created-after', options.createdAfter)! } : {}),
          ...(options.createdBefore ? { createdBefore: time('--created-before', options.createdBefore)! } : {}),
        };
        await using(options, async (ops) =>
          report(await ops.bulk(verb, filter, who, Boolean(options.dryRun)), Boolean(options.json)),
        );
      });
  }
  target(bulk.command('redrive'))
    .description('redrive the dead tasks that match')
    .option('--queue <name>')
    .option('--dead-after <time>', 'ISO 8601')
    .option('--dead-before <time>', 'ISO 8601')
    .option('--dry-run', 'list what would be redriven, change nothing')
    .action(async (options) => {
      const who = actor(options);
      const filter: TaskFilter = {
        ...(options.queue ? { queue: options.queue } : {}),
        ...(options.deadAfter ? { updatedAfter: time('--dead-after', options.deadAfter)! } : {}),
        ...(options.deadBefore ? { updatedBefore: time('--dead-before', options.deadBefore)! } : {}),
      };
      await using(options, async (ops) =>
        report(await ops.bulk('redrive', filter, who, Boolean(options.dryRun)), Boolean(options.json)),
      );
    });
}
