import type { Command } from 'commander';
import type { RunSummary } from '../client/client.js';
import { ValidationError } from '../errors.js';
import { currentStatus, isTerminal, RUN_STATUSES, type RunStatus } from '../runtime/view.js';
import { STORED_WORKFLOW } from '../workflows/interpreter.js';
import { client, databaseOf, direct, existingDatabase, json, remote, urlFlags, whole } from './options.js';
import type { Output } from './output.js';
import { reader, withSource } from './read.js';
import { readJournal, serverSource, type Source } from './source.js';
import { timelineLine } from './timeline.js';
import { createEngine } from '../engine.js';
import { runsNeedingPatch } from '../runtime/patches.js';
import { runSummary } from '../server/routes/run-records.js';

/** The name a person knows a run's workflow by: a stored workflow's name rather than `runledger.stored`. */
export async function workflowLabel(source: Source, run: Pick<RunSummary, 'workflow' | 'workflow_id'>): Promise<string> {
  if (run.workflow !== STORED_WORKFLOW || !run.workflow_id) return run.workflow;
  return (await source.workflowName(run.workflow_id)) ?? run.workflow_id;
}

/** `runledger runs list|show|start|signal|cancel` and `runledger events <run-id> [--follow]`. */
export function runCommands(program: Command, out: Output): void {
  const runs = program.command('runs').description('runs of every kind (code workflows, stored-workflow executions, agent sessions): list, show, start, signal, cancel');

  reader(runs.command('list'))
    .description('runs, newest first within each kind')
    .option('--status <status>', `${RUN_STATUSES.join(' | ')} (several: comma-separated)`)
    .option('--workflow <name>', "a workflow's name, or a stored workflow's id")
    .option('--limit <n>', 'at most this many', '20')
    .option('--needs-patch <change-id>', 'only runs that may still take the old branch of ctx.patched(change-id): none listed means deprecatePatch is safe')
    .action(async (options) => {
      const limit = whole('--limit', options.limit, 1, 10_000);
      if (options.needsPatch !== undefined) return needingPatch(options, out);
      const status =
        options.status === undefined
          ? undefined
          : String(options.status)
              .split(',')
              .map((s) => currentStatus(s.trim()));
      const unknown = status?.find((s) => !(RUN_STATUSES as readonly string[]).includes(s));
      if (unknown !== undefined) throw new ValidationError('--status', `'${unknown}' is not a run status (${RUN_STATUSES.join(', ')})`);
      await withSource(options, async (source) => {
        const found = await source.runs({ limit, ...(status ? { status } : {}), ...(options.workflow ? { workflow: options.workflow } : {}) });
        if (options.json) return out.json(found);
        // a run whose version no live worker has says so: it waits for a deploy of that version
        const rows = await Promise.all(
          found.map(async (r) => [r.id, r.waiting_for_version ? `${out.status(r.status)} (waiting for version ${r.waiting_for_version})` : out.status(r.status), r.created_at, await workflowLabel(source, r), r.error ?? '']),
        );
        out.table(['ID', 'STATUS', 'CREATED', 'WORKFLOW', 'ERROR'], rows, status || options.workflow ? 'no runs match' : 'no runs yet');
      });
    });

  reader(runs.command('show <run-id>'))
    .description("one run: status, input, output, error and each step's status, attempts and time")
    .action(async (id: string, options) => {
      await withSource(options, async (source) => {
        const run = await source.run(id);
        if (options.json) return out.json(run);
        out.line(`${run.id}  ${out.status(run.status)}  ${await workflowLabel(source, run)}`);
        out.line(`input:  ${JSON.stringify(run.input)}`);
        if (run.status === 'success') out.line(`output: ${JSON.stringify(run.output)}`);
        if (run.error) out.line(`error:  ${run.error}`);
        out.table(
          ['STEP', 'STATUS', 'ATTEMPTS', 'MS', 'ERROR'],
          run.steps.map((s) => [s.name, out.status(s.status), String(s.attempts), s.duration_ms === null ? '' : String(Math.round(s.duration_ms)), s.error ?? '']),
          'no steps yet',
        );
      });
    });

  remote(runs.command('start <workflow>'))
    .description('start a run of a code workflow the server registered (runledger serve --workflows <module>)')
    .option('--input <json>', 'the run input', '{}')
    .option('--id <id>', 'the run id: the same id again returns that run and starts nothing')
    .option('--idempotency-key <key>', 'the same key again returns the first run')
    .option('--wait', 'print the timeline until the run ends; exit 1 unless it succeeds')
    .action(async (workflow: string, options) => {
      const input = json('--input', options.input);
      const c = client(options);
      const started = await c.startRun(workflow, input, { ...(options.id ? { id: options.id } : {}), ...(options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}) });
      if (options.json && !options.wait) return out.json(started);
      out.line(started.duplicate ? `run ${started.run_id} exists (${started.status}): nothing new started` : `run ${started.run_id} started`);
      if (!options.wait) out.line(`follow it:  runledger events ${started.run_id}${urlFlags(options)} --follow`);
      if (options.wait) await follow(serverSource(c), started.run_id, out);
    });

  remote(runs.command('signal <run-id> <name>'))
    .description("send a signal to a run's waitForEvent(name)")
    .option('--payload <json>', 'the signal payload', 'null')
    .option('--idempotency-key <key>', 'the same key again sends nothing')
    .action(async (id: string, name: string, options) => {
      const sent = await client(options).signalRun(id, name, json('--payload', options.payload), options.idempotencyKey);
      if (options.json) return out.json(sent);
      out.line(`signal '${name}' sent to ${id}`);
    });

  remote(runs.command('cancel <run-id>'))
    .description('cancel a run of any kind: its running step is told to stop, compensations run')
    .action(async (id: string, options) => {
      const answer = await client(options).cancelRun(id);
      if (options.json) return out.json(answer);
      out.line(`run ${id}: cancelling (runledger runs show ${id}${urlFlags(options)})`);
    });

  reader(program.command('events [run-id]'))
    .description("a run's timeline (time, type, detail); --follow keeps printing until the run ends and exits 1 unless it succeeded. Without a run id: the raw journal, from --database")
    .option('--follow', 'keep printing until the run ends')
    .option('--stream <id>', 'without a run id: one stream only')
    .option('--prefix <prefix>', 'without a run id: streams starting with this')
    .option('--limit <n>', 'without a run id: at most this many', '100')
    .action(async (id: string | undefined, options) => {
      if (id === undefined) {
        if (!direct(options)) throw new ValidationError('--database', 'the raw journal (no run id) is read from the database: add --database <location>, or give a run id');
        const events = await readJournal(existingDatabase(databaseOf(options)), { limit: whole('--limit', options.limit, 1, 100_000), ...(options.stream ? { stream: options.stream } : {}), ...(options.prefix ? { prefix: options.prefix } : {}) });
        if (options.json) return out.json(events);
        for (const e of events) out.line(`${new Date(e.timestamp).toISOString()}  #${e.position}  ${e.streamId}@${e.version}  ${e.type}  ${JSON.stringify(e.data)}`);
        if (events.length === 0) out.line('no events');
        return;
      }
      await withSource(options, async (source) => {
        if (options.follow) return void (await follow(source, id, out, options.json));
        const events = [];
        for await (const e of source.timeline(id, false)) events.push(e);
        if (options.json) return out.json(events);
        for (const e of events) out.line(timelineLine(e));
      });
    });
}

/** Prints a run's timeline live until it ends; the exit code is 1 unless it succeeded. Returns its status. */
export async function follow(source: Source, id: string, out: Output, asJson = false): Promise<RunStatus> {
  for await (const e of source.timeline(id, true)) out.line(asJson ? JSON.stringify(e) : timelineLine(e));
  const run = await source.run(id);
  if (!asJson) out.line(`run ${id} ${out.status(run.status)}${run.status === 'success' ? ` → ${JSON.stringify(run.output)}` : run.error ? `: ${run.error}` : ''}`);
  if (run.status !== 'success' && isTerminal(run.status)) process.exitCode = 1;
  return run.status;
}

/** `runs list --needs-patch <id>`: from the database with `--database`, else from the server. */
async function needingPatch(options: Record<string, any>, out: Output): Promise<void> {
  const id = String(options.needsPatch);
  const filter = options.workflow ? { workflow: String(options.workflow) } : {};
  let runs: RunSummary[];
  if (direct(options)) {
    const engine = await createEngine({ database: existingDatabase(databaseOf(options)), workers: false });
    try {
      runs = (await runsNeedingPatch(engine.store, id, filter)).map((v) => runSummary(v));
    } finally {
      await engine.close();
    }
  } else runs = (await client(options).runsNeedingPatch(id, filter)).runs;
  if (options.json) return out.json(runs);
  out.table(
    ['ID', 'STATUS', 'CREATED', 'WORKFLOW'],
    runs.map((r) => [r.id, out.status(r.status), r.created_at, r.workflow]),
    `no run needs the old branch of '${id}': deprecatePatch is safe`,
  );
}
