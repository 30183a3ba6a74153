import { type Command, InvalidArgumentError, type OptionValues } from 'commander';
import { readFileSync } from 'node:fs';
import { ApiError, type Client } from '../client/client.js';
import { ValidationError } from '../errors.js';
import { inputOption, inputValue } from './hints.js';
import { client, json, remote, urlFlags, whole } from './options.js';
import { plural, type Output } from './output.js';
import { isReused, outputLine, stepOutcome, writeOutput } from './summary.js';
import { waitFor } from './wait.js';

/** The commands for stored workflows and their executions, on a running server (`runledger serve`). */
export function workflowCommands(program: Command, out: Output): void {
  const workflows = program.command('workflows').description('stored workflow definitions: apply, list');
  remote(workflows.command('apply <file>'))
    .description(
      'create the workflow in a JSON file, or update the one with its id or name (an unchanged file makes no new version)',
    )
    .action(async (file: string, options) => {
      const c = client(options);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw new ValidationError(
          '<file>',
          `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
        );
      }
      const definition = json(file, text) as { id?: string; name?: string };
      const { id, ...body } = definition;
      const existing = id ?? (await findByName(c, definition.name));
      const before = existing ? await c.workflow(existing) : undefined;
      // the server answers every problem of the file at once: each on its own line, not joined with '; '
      const saved = await (existing ? c.updateWorkflow(existing, body) : c.createWorkflow(body)).catch(
        (error: unknown) => {
          if (!(error instanceof ApiError) || error.problems.length < 2) throw error;
          throw new ApiError(
            error.status,
            error.code,
            `${file}: ${error.problems.length} problems\n${error.problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`,
            error.problems,
          );
        },
      );
      if (options.json) return out.json(saved);
      const verb = !before ? 'created' : before.version === saved.version ? 'unchanged' : 'updated';
      out.line(`${verb} ${saved.id} '${saved.name}' version ${saved.version} (${plural(saved.steps.length, 'step')})`);
      // by name when the shell takes it as it is
      if (verb === 'created')
        out.line(
          `run it:  runledger start ${/^[\w.-]+$/.test(saved.name) ? saved.name : saved.id}${urlFlags(options)} --input '{}' --wait`,
        );
    });
  remote(workflows.command('list'))
    .description('stored workflows, newest first')
    .action(async (options) => {
      const found = (await client(options).workflows({ limit: 100 })).workflows;
      if (options.json) return out.json(found);
      out.table(
        ['ID', 'VERSION', 'STATE', 'NAME', 'STEPS'],
        found.map((w) => [
          w.id,
          `v${w.version}`,
          out.status(w.enabled ? 'enabled' : 'disabled'),
          w.name,
          String(w.steps.length),
        ]),
        'no workflows yet (runledger workflows apply <file.json>)',
      );
    });

  const executions = program
    .command('executions')
    .description('executions of stored workflows: list, show, retry, rerun, cancel');
  remote(executions.command('list <workflow>'))
    .description('executions of a stored workflow (its name or id), newest first')
    .option('--limit <n>', 'at most this many (1 to 100)', '20')
    .action(async (workflow: string, options) => {
      const limit = whole('--limit', options.limit, 1, 100);
      const c = client(options);
      const workflowId = workflow.startsWith('wf_') ? workflow : await findByName(c, workflow);
      if (workflowId === undefined)
        throw new ValidationError('<workflow>', `no stored workflow is named '${workflow}' (runledger workflows list)`);
      const found = (await c.executions(workflowId, { limit })).executions;
      if (options.json) return out.json(found);
      out.table(
        ['ID', 'STATUS', 'STARTED', 'TRIGGER', 'ERROR'],
        found.map((e) => [
          e.execution_id,
          out.status(e.status),
          e.started_at ?? 'queued',
          e.trigger_type,
          e.error ?? '',
        ]),
        'no executions yet',
      );
    });
  executionCommand(executions, 'show', 'one execution with its steps')
    .option('--output <file>', 'write the output to this file (JSON)')
    .action(
      execution(async (c, workflowId, executionId, options) => {
        const [e, run] = await Promise.all([c.execution(workflowId, executionId), c.run(executionId)]);
        if (options.output !== undefined) writeOutput(options.output, run.output);
        if (options.json) return out.json({ ...e, output: run.output });
        out.line(
          `${e.execution_id}  ${out.status(e.status)}  version ${e.workflow_version}  ${e.trigger_type}  ${JSON.stringify(e.trigger_data)}${e.error ? `\nerror: ${e.error}` : ''}${e.cancel_reason ? `\ncancelled: ${e.cancel_reason} (by ${e.cancelled_by ?? 'user'})` : ''}`,
        );
        if (e.message) out.line(`message: ${e.message}`);
        // a reused step did no work in this execution; an earlier attempt's error of a step that succeeded is history
        out.table(
          ['STEP', 'TYPE', 'STATUS', 'ATTEMPTS', 'MS', 'ERROR'],
          e.steps.map((s) => [
            s.step_id,
            s.type,
            out.status(stepOutcome(s) === 'reused' ? 'reused' : s.status),
            String(s.attempts),
            isReused(s) || s.duration_ms === null ? '' : String(Math.round(s.duration_ms)),
            s.status === 'success' ? '' : (s.error ?? ''),
          ]),
          'no steps',
        );
        const where = outputLine(
          run.output ?? undefined,
          `runledger executions show ${executionId}${urlFlags(options)}`,
        );
        if (where && options.output === undefined) out.line(where);
      }),
    );
  executionCommand(
    executions,
    'retry',
    'retry the failed branches of a partly failed execution as a new one; what succeeded is reused',
  )
    .option('--branches <names>', 'only these branches (comma-separated)')
    .option('--wait', 'follow the new execution until it ends (exit code 1 unless it succeeds)')
    .option('--output <file>', 'with --wait: write the output to this file (JSON)')
    .action(
      execution(async (c, workflowId, executionId, options) => {
        const branches = options.branches
          ? String(options.branches)
              .split(',')
              .map((b: string) => b.trim())
          : undefined;
        const started = await c.retry(workflowId, executionId, branches);
        if (options.json && !options.wait) return out.json(started);
        if (!options.json)
          out.line(`execution ${started.execution_id} retries ${started.branches.join(', ')} of ${executionId}`);
        if (options.wait) await waitFor(c, workflowId, started.execution_id, out, options);
      }),
    );
  inputOption(
    executionCommand(
      executions,
      'rerun',
      'run an execution again as a new one (its trigger data unless --input); --from reuses the recorded outputs of the steps before that step',
    ),
    'other trigger data, a JSON object',
    ['data'],
  )
    .option('--from <step>', 'the first step to run again (default: the first step)')
    .option(
      '--timeout <step=duration>',
      'a longer timeout for a step of the rerun, e.g. layout_wait=10m (a poll: how long it polls); repeatable',
      collectTimeout,
    )
    .option('--wait', 'follow the new execution until it ends (exit code 1 unless it succeeds)')
    .option('--output <file>', 'with --wait: write the output to this file (JSON)')
    .action(
      execution(async (c, workflowId, executionId, options) => {
        const data = inputValue(options, ['data']) as Record<string, unknown> | undefined;
        const timeouts = (options.timeout ?? {}) as Record<string, string>;
        const started = await c.rerun(workflowId, executionId, {
          ...(options.from ? { from_step: options.from } : {}),
          ...(data !== undefined ? { trigger_data: data } : {}),
          ...(Object.keys(timeouts).length > 0 ? { timeouts } : {}),
        });
        if (options.json && !options.wait) return out.json(started);
        if (!options.json)
          out.line(
            `execution ${started.execution_id} reruns ${executionId}${options.from ? ` from ${options.from}` : ''}`,
          );
        if (options.wait) await waitFor(c, workflowId, started.execution_id, out, options);
      }),
    );
  executionCommand(executions, 'cancel', 'cancel a running execution')
    .option('--reason <text>', 'why: journaled, and shown by executions show')
    .option('--delete-artifacts', 'compensations delete the artifacts it produced ({{cancel.delete_artifacts}})')
    .action(
      execution(async (c, workflowId, executionId, options) => {
        const answer = await c.cancel(
          workflowId,
          executionId,
          options.reason === undefined ? undefined : String(options.reason),
          options.deleteArtifacts ? { delete_artifacts: true } : {},
        );
        if (options.json) return out.json(answer);
        out.line(`execution ${executionId}: cancelling`);
      }),
    );
}

/**
 * `executions <verb> <execution-id>`: an execution id is unique across workflows, so its workflow is
 * read from its run. The old form `<workflow-id> <execution-id>` keeps working (not in the help).
 */
/** `--timeout layout_wait=10m`, repeated: the server checks the step and the duration (400 naming `timeouts.<id>`). */
function collectTimeout(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`expected <step>=<duration>, such as layout_wait=10m (got '${value}')`);
  return { ...previous, [value.slice(0, at)]: value.slice(at + 1) };
}

function executionCommand(executions: Command, verb: string, description: string): Command {
  return remote(executions.command(verb))
    .description(description)
    .argument('<execution-id>', 'ex_…: its workflow is read from it')
    .argument('[old-form-execution-id]')
    .usage('[options] <execution-id>')
    .configureHelp({
      visibleArguments: (cmd) => cmd.registeredArguments.filter((a) => !a.name().startsWith('old-form')),
    });
}

type ExecutionAction = (c: Client, workflowId: string, executionId: string, options: OptionValues) => Promise<void>;

function execution(
  action: ExecutionAction,
): (first: string, second: string | undefined, options: OptionValues) => Promise<void> {
  return async (first, second, options) => {
    const c = client(options);
    if (second !== undefined) return action(c, first, second, options);
    const run = await c.run(first).catch((error) => {
      throw error instanceof ApiError && error.status === 404
        ? new ValidationError('<execution-id>', `no execution ${first} (runledger executions list <workflow>)`)
        : error;
    });
    if (!run.workflow_id)
      throw new ValidationError(
        '<execution-id>',
        `${first} is a run of ${run.workflow}, not an execution of a stored workflow (runledger runs show ${first})`,
      );
    return action(c, run.workflow_id, first, options);
  };
}

/** The id of the stored workflow named `name`, or undefined. */
export async function findByName(c: Client, name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined;
  for (let after: string | undefined; ; ) {
    const page = await c.workflows({ limit: 100, ...(after ? { last_key: after } : {}) });
    const found = page.workflows.find((w) => w.name === name);
    if (found) return found.id;
    if (!page.last_key) return undefined;
    after = page.last_key;
  }
}
