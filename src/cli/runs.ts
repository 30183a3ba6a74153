import type { Command } from 'commander';
import type { RunSummary } from '../client/client.js';
import { ValidationError } from '../errors.js';
import { currentStatus, RUN_STATUSES } from '../runtime/read/view.js';
import { STORED_WORKFLOW } from '../workflows/interpreter.js';
import { hint, inputOption, inputValue } from './hints.js';
import { client, databaseOf, direct, existingDatabase, remote, urlFlags, whole } from './options.js';
import type { Output } from './output.js';
import { reader, withSource } from './read.js';
import { runDiffCommand } from './runs-diff.js';
import { readJournal, type Source } from './source.js';
import { start, startFlags } from './start.js';
import { isReused, writeOutput } from './summary.js';
import { timelineLine } from './timeline.js';
import { follow } from './wait.js';
import { createEngine } from '../engine.js';
import { runSummary } from '../server/records/runs.js';

/** The name a person knows a run's workflow by: a stored workflow's name rather than `runledger.stored`. */
export async function workflowLabel(
  source: Source,
  run: Pick<RunSummary, 'workflow' | 'workflow_id'>,
): Promise<string> {
  if (run.workflow !== STORED_WORKFLOW || !run.workflow_id) return run.workflow;
  return (await source.workflowName(run.workflow_id)) ?? run.workflow_id;
}

/** `runledger runs list|show|signal|cancel` (and the old `runs start`) and `runledger events <run-id> [--follow]`. */
export function runCommands(program: Command, out: Output): void {
  const runs = program
    .command('runs')
    .description(
      'runs of every kind (code workflows, stored-workflow executions, agent sessions): list, show, signal, cancel (start one: runledger start)',
    );

  reader(runs.command('list'))
    .description('runs of every kind, newest first (by creation time; ties by id, descending)')
    .option('--status <status>', `${RUN_STATUSES.join(' | ')} (several: comma-separated)`)
    .option('--workflow <name>', "a workflow's name, or a stored workflow's id")
    .option('--limit <n>', 'at most this many', '20')
    .option(
      '--needs-patch <change-id>',
      'only runs that may still take the old branch of ctx.patched(change-id): none listed means deprecatePatch is safe',
    )
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
      if (unknown !== undefined)
        throw new ValidationError('--status', `'${unknown}' is not a run status (${RUN_STATUSES.join(', ')})`);
      await withSource(options, async (source) => {
        const found = await source.runs({
          limit,
          ...(status ? { status } : {}),
          ...(options.workflow ? { workflow: options.workflow } : {}),
        });
        if (options.json) return out.json(found);
        // a run whose version no live worker has says so: it waits for a deploy of that version
        const rows = await Promise.all(
          found.map(async (r) => [
            r.id,
            r.waiting_for_version
              ? `${out.status(r.status)} (waiting for version ${r.waiting_for_version})`
              : r.waiting_for // a held-back run says what holds it: its concurrency key, a rate limit, a window
                ? `${out.status(r.status)} (${r.waiting_for})`
                : out.status(r.status),
            r.created_at,
            await workflowLabel(source, r),
            r.error ?? '',
          ]),
        );
        out.table(
          ['ID', 'STATUS', 'CREATED', 'WORKFLOW', 'ERROR'],
          rows,
          status || options.workflow ? 'no runs match' : 'no runs yet',
        );
      });
    });

  reader(runs.command('show <run-id>'))
    .description("one run: status, input, output, error and each step's status, attempts and time")
    .option('--output <file>', 'write the output to this file (JSON)')
    .action(async (id: string, options) => {
      await withSource(options, async (source) => {
        const run = await source.run(id);
        if (options.output !== undefined) writeOutput(options.output, run.output);
        if (options.json) return out.json(run);
        out.line(`${run.id}  ${out.status(run.status)}  ${await workflowLabel(source, run)}`);
        out.line(`input:  ${JSON.stringify(run.input)}`);
        if (run.status === 'success') out.line(`output: ${JSON.stringify(run.output)}`);
        if (run.error) out.line(`error:  ${run.error}`);
        // an earlier attempt's error of a step that succeeded is history: the attempts column tells it
        out.table(
          ['STEP', 'STATUS', 'ATTEMPTS', 'MS', 'ERROR'],
          run.steps.map((s) => [
            s.name,
            out.status(isReused(s) && s.status === 'success' ? 'reused' : s.status),
            String(s.attempts),
            isReused(s) || s.duration_ms === null ? '' : String(Math.round(s.duration_ms)),
            s.status === 'success' ? '' : (s.error ?? ''),
          ]),
          'no steps yet',
        );
      });
    });

  runDiffCommand(runs, out);

  startFlags(runs.command('start <workflow>', { hidden: true }))
    .description('the old name of runledger start (code workflows)')
    .action((workflow: string, options) => {
      hint('use runledger start');
      return start(workflow, options, out, 'code');
    });

  inputOption(remote(runs.command('signal <run-id> <name>')), 'the signal payload, JSON (default: null)', ['payload'])
    .description("send a signal to a run's waitForEvent(name)")
    .option('--idempotency-key <key>', 'the same key again sends nothing')
    .action(async (id: string, name: string, options) => {
      const sent = await client(options).signalRun(
        id,
        name,
        inputValue(options, ['payload'], 'null'),
        options.idempotencyKey,
      );
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

  remote(runs.command('approve-budget <run-id>'))
    .description(
      'decide a run waiting for its budget: let it go on (its budget again on top, or --tokens …) or --reject',
    )
    .requiredOption('--by <name>', 'who decides: journaled with the decision')
    .option('--reject', 'fail the run instead (a BudgetExceededError; compensations run)')
    .option('--tokens <n>', 'tokens to add', Number)
    .option('--cost <n>', 'cost to add', Number)
    .option('--tool-calls <n>', 'tool calls to add', Number)
    .option('--steps <n>', 'steps to add', Number)
    .option('--wall-time <duration>', "wall time to add: ms, or '10m', '1h'")
    .action(async (id: string, options) => {
      const extend = Object.fromEntries(
        Object.entries({
          tokens: options.tokens,
          cost: options.cost,
          tool_calls: options.toolCalls,
          steps: options.steps,
          wall_time: options.wallTime,
        }).filter(([, v]) => v !== undefined),
      );
      const decision = options.reject ? 'reject' : 'approve';
      const body = { by: options.by as string, ...(Object.keys(extend).length > 0 ? { extend } : {}) };
      const answer = await client(options).decideBudget(id, decision, body);
      if (options.json) return out.json(answer);
      out.line(`run ${id}: ${decision === 'approve' ? 'approved' : 'rejected'} (${answer.reason})`);
    });

  remote(runs.command('decide-effect <run-id>'))
    .description(
      'decide the unknown effect a run waits on: it --happened (with --output), run it --again, or --fail it',
    )
    .requiredOption('--by <name>', 'who decides: journaled with the decision')
    .option('--happened', 'the effect happened: the step completes with --output (JSON; default null)')
    .option('--again', 'it did not: the step runs again')
    .option('--fail', 'fail the step')
    .option('--output <json>', 'with --happened: the step output, as JSON')
    .action(async (id: string, options) => {
      const chosen = (['happened', 'again', 'fail'] as const).filter((d) => options[d]);
      if (chosen.length !== 1)
        throw new ValidationError('--happened', 'give exactly one of --happened, --again, --fail');
      const decision = chosen[0]!;
      let output: unknown;
      if (options.output !== undefined) {
        try {
          output = JSON.parse(options.output);
        } catch {
          throw new ValidationError('--output', `must be JSON (got ${options.output})`);
        }
      }
      const answer = await client(options).decideEffect(id, {
        decision,
        by: options.by as string,
        ...(output === undefined ? {} : { output }),
      });
      if (options.json) return out.json(answer);
      out.line(`run ${id}: step ${answer.name} decided ${decision}`);
    });

  reader(program.command('events [run-id]'))
    .description(
      "a run's timeline (time, type, detail); --follow keeps printing until the run ends and exits 1 unless it succeeded. Without a run id: the raw journal, from --database",
    )
    .option('--follow', 'keep printing until the run ends')
    .option('--stream <id>', 'without a run id: one stream only')
    .option('--prefix <prefix>', 'without a run id: streams starting with this')
    .option('--limit <n>', 'without a run id: at most this many', '100')
    .action(async (id: string | undefined, options) => {
      if (id === undefined) {
        if (!direct(options))
          throw new ValidationError(
            '--database',
            'the raw journal (no run id) is read from the database: add --database <location>, or give a run id',
          );
        const events = await readJournal(existingDatabase(databaseOf(options)), {
          limit: whole('--limit', options.limit, 1, 100_000),
          ...(options.stream ? { stream: options.stream } : {}),
          ...(options.prefix ? { prefix: options.prefix } : {}),
        });
        if (options.json) return out.json(events);
        for (const e of events)
          out.line(
            `${new Date(e.timestamp).toISOString()}  #${e.position}  ${e.streamId}@${e.version}  ${e.type}  ${JSON.stringify(e.data)}`,
          );
        if (events.length === 0) out.line('no events');
        return;
      }
      await withSource(options, async (source) => {
        if (options.follow) return void (await follow(source, id, out, options));
        const events = [];
        for await (const e of source.timeline(id, false)) events.push(e);
        if (options.json) return out.json(events);
        for (const e of events) out.line(timelineLine(e));
      });
    });
}

/** `runs list --needs-patch <id>`: from the database with `--database`, else from the server. */
async function needingPatch(options: Record<string, any>, out: Output): Promise<void> {
  const id = String(options.needsPatch);
  const filter = options.workflow ? { workflow: String(options.workflow) } : {};
  let runs: RunSummary[];
  if (direct(options)) {
    const engine = await createEngine({ database: existingDatabase(databaseOf(options)), workers: false });
    try {
      runs = (await engine.runs.needingPatch(id, filter)).map((v) => runSummary(v));
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
