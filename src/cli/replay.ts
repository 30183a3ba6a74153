import type { Command } from 'commander';
import type { Client } from '../client/client.js';
import { toMs } from '../duration.js';
import { createEngine, type Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import type { Workflow } from '../runtime/workflow.js';
import { recordedHistory, replayHistories, type RecordedHistory } from '../runtime/replay.js';
import { client, databaseOf, direct, existingDatabase, whole } from './options.js';
import type { Output } from './output.js';
import { reader } from './read.js';
import { workflowsOf } from './server.js';

/** Which runs a replay reads: named ones, or the newest of the module's workflows (of one, since a time). */
interface Wanted {
  runs: string[];
  workflows: Set<string>;
  since: number | null;
  limit: number;
}

/** Where the histories come from: the database itself (`--database`) or a server (`--url`). */
interface Histories {
  ids(wanted: Wanted): Promise<string[]>;
  history(id: string): Promise<RecordedHistory>;
  close(): Promise<void>;
}

/**
 * `runledger replay --workflows <module>`: re-runs recorded histories through the module's code with no side effects
 * and prints, per run, "replays" or its first divergence; exit code 1 when any run diverges (a deploy gate in CI).
 */
export function replayCommands(program: Command, out: Output): void {
  reader(program.command('replay'))
    .description(
      'replay recorded runs through new code (no step, sleep or wait runs; nothing is written): ' +
        'each run replays, or its first divergence is printed; exits 1 when any diverges',
    )
    .requiredOption('--workflows <module>', 'the new code: a JavaScript or TypeScript module exporting workflows')
    .option('--run <id>', 'this run (again for several)', (id: string, ids: string[] = []) => [...ids, id])
    .option('--since <duration>', "runs created this long ago or later: '24h', '7d'")
    .option('--workflow <name>', "only this workflow's runs")
    .option('--limit <n>', 'at most this many runs, newest first', '1000')
    .action(async (options) => {
      const code = await workflowsOf(options.workflows);
      const names = new Set(code.map((w) => w.name));
      if (options.workflow !== undefined && !names.has(options.workflow))
        throw new ValidationError('--workflow', `'${options.workflow}' is not a workflow of ${options.workflows}`);
      const wanted: Wanted = {
        runs: options.run ?? [],
        workflows: options.workflow !== undefined ? new Set([options.workflow]) : names,
        since: options.since === undefined ? null : Date.now() - toMs(options.since, '--since'),
        limit: whole('--limit', options.limit, 1, 100_000),
      };
      const source = direct(options)
        ? databaseHistories(await createEngine({ database: existingDatabase(databaseOf(options)), workers: false }))
        : serverHistories(client(options));
      try {
        await report(source, wanted, code, options.json === true, out);
      } finally {
        await source.close();
      }
    });
}

async function report(source: Histories, wanted: Wanted, code: Workflow[], json: boolean, out: Output): Promise<void> {
  const results = [];
  for (const id of await source.ids(wanted)) results.push(...(await replayHistories([await source.history(id)], code)));
  const diverged = results.filter((r) => !r.replays).length;
  if (diverged > 0) process.exitCode = 1;
  if (json) return out.json({ results, replayed: results.length, diverged });
  for (const r of results)
    out.line(`${r.runId}  ${r.workflow}  ${r.replays ? 'replays' : `diverges: ${r.divergence}`}`);
  out.line(
    results.length === 0
      ? 'no runs to replay'
      : `${results.length - diverged} of ${results.length} runs replay${diverged > 0 ? `, ${diverged} diverge` : ''}`,
  );
}

function databaseHistories(engine: Engine): Histories {
  return {
    async ids(wanted) {
      if (wanted.runs.length > 0) return wanted.runs;
      const ids: string[] = [];
      let last: string | null = null;
      do {
        const page = await engine.runs.listRecent({
          limit: 100,
          ...(wanted.since !== null ? { createdAfter: wanted.since } : {}),
          ...(last ? { last_key: last } : {}),
        });
        for (const run of page.runs)
          if (wanted.workflows.has(run.workflow) && ids.length < wanted.limit) ids.push(run.id);
        last = page.last_key;
      } while (last !== null && ids.length < wanted.limit);
      return ids;
    },
    history: (id) => recordedHistory(engine, id),
    close: () => engine.close(),
  };
}

/** Over HTTP big values (over the server's blob threshold, 256 KiB by default) arrive as references, not whole. */
function serverHistories(c: Client): Histories {
  return {
    async ids(wanted) {
      if (wanted.runs.length > 0) return wanted.runs;
      const ids: string[] = [];
      let last: string | null = null;
      do {
        const page = await c.runs({ limit: 100, ...(last ? { last_key: last } : {}) });
        for (const run of page.runs) {
          if (wanted.since !== null && Date.parse(run.created_at) < wanted.since) return ids;
          if (wanted.workflows.has(run.workflow) && ids.length < wanted.limit) ids.push(run.id);
        }
        last = page.last_key;
      } while (last !== null && ids.length < wanted.limit);
      return ids;
    },
    async history(id) {
      const events: RecordedHistory['events'] = [];
      for (let after = 0; ; ) {
        const page = await c.runEvents(id, { after, limit: 1000 });
        events.push(...page.events);
        if (page.next_after === null) return { runId: id, events };
        after = page.next_after;
      }
    },
    close: async () => {},
  };
}
