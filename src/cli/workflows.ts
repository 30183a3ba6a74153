import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { ValidationError } from '../errors.js';
import { client, json, remote, urlFlags, whole } from './options.js';
import { plural, type Output } from './output.js';
import { dueAt } from './timeline.js';
import { RUN_EVENT } from '../runtime/events.js';

/** The commands for stored workflows and their executions, on a running server (`runledger serve`). */
export function workflowCommands(program: Command, out: Output): void {
  const workflows = program.command('workflows').description('stored workflow definitions: apply, list');
  remote(workflows.command('apply <file>'))
    .description('create the workflow in a JSON file, or update the one with its id or name (an unchanged file makes no new version)')
    .action(async (file: string, options) => {
      const c = client(options);
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (error) {
        throw new ValidationError('<file>', `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
      const definition = json(file, text) as { id?: string; name?: string };
      const { id, ...body } = definition;
      const existing = id ?? (await findByName(c, definition.name));
      const before = existing ? await c.workflow(existing) : undefined;
      const saved = existing ? await c.updateWorkflow(existing, body) : await c.createWorkflow(body);
      if (options.json) return out.json(saved);
      const verb = !before ? 'created' : before.version === saved.version ? 'unchanged' : 'updated';
      out.line(`${verb} ${saved.id} '${saved.name}' version ${saved.version} (${plural(saved.steps.length, 'step')})`);
      if (verb === 'created') out.line(`run it:  runledger run ${saved.id}${urlFlags(options)} --data '{}' --wait`);
    });
  remote(workflows.command('list'))
    .description('stored workflows, oldest first')
    .action(async (options) => {
      const found = (await client(options).workflows({ limit: 100 })).workflows;
      if (options.json) return out.json(found);
      out.table(
        ['ID', 'VERSION', 'STATE', 'NAME', 'STEPS'],
        found.map((w) => [w.id, `v${w.version}`, out.status(w.enabled ? 'enabled' : 'disabled'), w.name, String(w.steps.length)]),
        'no workflows yet (runledger workflows apply <file.json>)',
      );
    });

  remote(program.command('run <workflow>'))
    .description('execute a stored workflow (its id, or its name); --wait follows its steps and prints its output')
    .option('--data <json>', 'trigger data, a JSON object', '{}')
    .option('--idempotency-key <key>', 'a repeat with the same key returns the same execution')
    .option('--wait', 'follow the steps live until the execution ends (exit code 1 unless it succeeds)')
    .action(async (workflowId: string, options) => {
      const data = json('--data', options.data);
      const c = client(options);
      workflowId = await workflowRef(c, workflowId);
      const started = await c.execute(workflowId, { trigger_data: data }, options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {});
      if (!options.wait) return options.json ? out.json(started) : out.line(`execution ${started.execution_id} ${out.status(started.status)}`);
      if (!options.json) out.line(`execution ${started.execution_id} ${out.status(started.status)}`);
      await waitFor(c, workflowId, started.execution_id, out, Boolean(options.json));
    });

  const executions = program.command('executions').description('executions of stored workflows: list, show, retry, rerun, cancel');
  remote(executions.command('list <workflow-id>'))
    .description('executions of a workflow, newest first')
    .option('--limit <n>', 'at most this many (1 to 100)', '20')
    .action(async (workflowId: string, options) => {
      const limit = whole('--limit', options.limit, 1, 100);
      const found = (await client(options).executions(workflowId, { limit })).executions;
      if (options.json) return out.json(found);
      out.table(
        ['ID', 'STATUS', 'STARTED', 'TRIGGER', 'ERROR'],
        found.map((e) => [e.execution_id, out.status(e.status), e.started_at, e.trigger_type, e.error ?? '']),
        'no executions yet',
      );
    });
  remote(executions.command('show <workflow-id> <execution-id>'))
    .description('one execution with its steps')
    .action(async (workflowId: string, executionId: string, options) => {
      const e = await client(options).execution(workflowId, executionId);
      if (options.json) return out.json(e);
      out.line(`${e.execution_id}  ${out.status(e.status)}  version ${e.workflow_version}  ${e.trigger_type}  ${JSON.stringify(e.trigger_data)}${e.error ? `\nerror: ${e.error}` : ''}`);
      out.table(
        ['STEP', 'TYPE', 'STATUS', 'ATTEMPTS', 'MS', 'ERROR'],
        e.steps.map((s) => [s.step_id, s.type, out.status(s.status), String(s.attempts), s.duration_ms === null ? '' : String(Math.round(s.duration_ms)), s.error ?? '']),
        'no steps',
      );
    });
  remote(executions.command('retry <workflow-id> <execution-id>'))
    .description('retry the failed branches of a partly failed execution as a new one; what succeeded is reused')
    .option('--branches <names>', 'only these branches (comma-separated)')
    .option('--wait', 'follow the new execution until it ends (exit code 1 unless it succeeds)')
    .action(async (workflowId: string, executionId: string, options) => {
      const c = client(options);
      const started = await c.retry(
        workflowId,
        executionId,
        options.branches
          ? String(options.branches)
              .split(',')
              .map((b: string) => b.trim())
          : undefined,
      );
      if (options.json && !options.wait) return out.json(started);
      if (!options.json) out.line(`execution ${started.execution_id} retries ${started.branches.join(', ')} of ${executionId}`);
      if (options.wait) await waitFor(c, workflowId, started.execution_id, out, Boolean(options.json));
    });
  remote(executions.command('rerun <workflow-id> <execution-id>'))
    .description('run an execution again as a new one (its trigger data unless --data); --from reuses the recorded outputs of the steps before that step')
    .option('--from <step>', 'the first step to run again (default: the first step)')
    .option('--data <json>', 'other trigger data, a JSON object')
    .option('--wait', 'follow the new execution until it ends (exit code 1 unless it succeeds)')
    .action(async (workflowId: string, executionId: string, options) => {
      const c = client(options);
      const data = options.data !== undefined ? (json('--data', options.data) as Record<string, unknown>) : undefined;
      const started = await c.rerun(workflowId, executionId, { ...(options.from ? { from_step: options.from } : {}), ...(data ? { trigger_data: data } : {}) });
      if (options.json && !options.wait) return out.json(started);
      if (!options.json) out.line(`execution ${started.execution_id} reruns ${executionId}${options.from ? ` from ${options.from}` : ''}`);
      if (options.wait) await waitFor(c, workflowId, started.execution_id, out, Boolean(options.json));
    });
  remote(executions.command('cancel <workflow-id> <execution-id>'))
    .description('cancel a running execution')
    .action(async (workflowId: string, executionId: string, options) => {
      const answer = await client(options).cancel(workflowId, executionId);
      if (options.json) return out.json(answer);
      out.line(`execution ${executionId}: cancelling`);
    });
}

/**
 * Follows an execution from its journal over SSE (no polling) until it ends: steps and polls as they
 * end or retry (and when the next attempt is due), each business state it enters with the ETA;
 * then its outcome and output. Exit code 1 unless it succeeded.
 */
async function waitFor(c: ReturnType<typeof client>, workflowId: string, executionId: string, out: Output, asJson: boolean): Promise<void> {
  const startedAt = new Map<string, number>();
  let state: string | null = null;
  for await (const event of c.follow(executionId)) {
    if (asJson) continue;
    const { name, attempt, error, retryAt } = event.data;
    const at = Date.parse(event.timestamp);
    if (event.type === RUN_EVENT.stepStarted || event.type === RUN_EVENT.pollStarted) startedAt.set(name, at);
    if (event.type === RUN_EVENT.stepStarted && attempt > 1) out.line(`  ${name}: ${out.status('running')} (attempt ${attempt})`);
    else if ((event.type === RUN_EVENT.stepStarted || event.type === RUN_EVENT.pollStarted) && event.data.label) out.line(`  ${name}: ${event.data.label}`);
    if (event.type === RUN_EVENT.stepCompleted || event.type === RUN_EVENT.pollCompleted) {
      const polls = event.type === RUN_EVENT.pollCompleted ? ` (${plural(attempt, 'poll')})` : '';
      out.line(`  ${name}: ${out.status('success')} ${at - (startedAt.get(name) ?? at)} ms${polls}`);
    }
    if (event.type === RUN_EVENT.stepFailed) out.line(`  ${name}: ${retryAt === null ? out.status('failed') : `${out.status('retrying')} at ${dueAt(retryAt)}`} — ${error}`);
    if (event.type === RUN_EVENT.pollAttempted && error) out.line(`  ${name}: ${out.status('retrying')} — ${error}`);
    if (event.type === RUN_EVENT.pollFailed) out.line(`  ${name}: ${out.status('failed')} — ${error}`);
    if (event.type === RUN_EVENT.pollTimedOut) out.line(`  ${name}: ${out.status('timed_out')}`);
    // parallel branches may enter the same state each: it is printed once
    if (event.type === RUN_EVENT.stateChanged && name !== state) {
      state = name;
      const now = await c.execution(workflowId, executionId).catch(() => null);
      // no ETA before there is history, nor once nothing is left (the last state comes before the run's end)
      const eta = !now?.eta_seconds || now.finished_at ? '' : `  ETA ~${Math.ceil(now.eta_seconds)} s`;
      out.line(`state ${name}${eta}`);
    }
  }
  const record = await c.execution(workflowId, executionId);
  if (record.status !== 'success') process.exitCode = 1;
  const run = await c.run(executionId);
  if (asJson) return out.json({ ...record, output: run.output });
  out.line(`execution ${record.execution_id} ${out.status(record.status)}${record.state ? ` ${record.state}` : ''}${record.error ? `: ${record.error}` : ''}`);
  if (record.status === 'success') out.line(`output: ${JSON.stringify(run.output)}`);
}

/** A workflow named by id (`wf_…`) or by name, as its id. */
async function workflowRef(c: ReturnType<typeof client>, ref: string): Promise<string> {
  if (ref.startsWith('wf_')) return ref;
  const id = await findByName(c, ref);
  if (!id) throw new ValidationError('<workflow>', `no stored workflow is named '${ref}' (runledger workflows list)`);
  return id;
}

async function findByName(c: ReturnType<typeof client>, name: string | undefined): Promise<string | undefined> {
  if (name === undefined) return undefined;
  for (let after: string | undefined; ; ) {
    const page = await c.workflows({ limit: 100, ...(after ? { last_key: after } : {}) });
    const found = page.workflows.find((w) => w.name === name);
    if (found) return found.id;
    if (!page.last_key) return undefined;
    after = page.last_key;
  }
}
