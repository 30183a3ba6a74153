import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { Client } from '../client/client.js';

/** Adds the options of a command that talks to a running server. */
export function api(cmd: Command): Command {
  return cmd.option('--url <url>', 'the server (default: $RUNLEDGER_URL or http://127.0.0.1:8080)').option('--token <token>', 'bearer token (default: $RUNLEDGER_TOKEN)');
}

/** The client those options name. */
export function client(options: { url?: string; token?: string }): Client {
  return new Client({ url: options.url ?? process.env.RUNLEDGER_URL ?? 'http://127.0.0.1:8080', token: options.token ?? process.env.RUNLEDGER_TOKEN });
}

/** The commands that talk to a running server (`runledger serve`) over its HTTP API. */
export function apiCommands(program: Command, print: (line: string) => void): void {
  const workflows = program.command('workflows').description('stored workflow definitions');
  api(workflows.command('apply <file>'))
    .description('create the workflow in a JSON file, or update the one with its id or name')
    .action(async (file: string, options) => {
      const c = client(options);
      const definition = JSON.parse(readFileSync(file, 'utf8')) as { id?: string; name?: string };
      const { id, ...body } = definition;
      const existing = id ?? (await c.workflows({ limit: 100 })).workflows.find((w) => w.name === definition.name)?.id;
      const saved = existing ? await c.updateWorkflow(existing, body) : await c.createWorkflow(body);
      print(`${existing ? 'updated' : 'created'} ${saved.id} '${saved.name}' version ${saved.version} (${saved.steps.length} steps)`);
    });
  api(workflows.command('list')).action(async (options) => {
    for (const w of (await client(options).workflows()).workflows) print(`${w.id}  v${w.version}  ${w.enabled ? 'enabled ' : 'disabled'}  ${w.name}  (${w.steps.length} steps)`);
  });

  api(program.command('run <workflow-id>'))
    .description('execute a stored workflow')
    .option('--data <json>', 'trigger data', '{}')
    .option('--idempotency-key <key>', 'a repeat with the same key returns the same execution')
    .option('--wait', 'follow the steps live until the execution ends (exit code 1 unless it succeeds)')
    .action(async (workflowId: string, options) => {
      const c = client(options);
      const started = await c.execute(workflowId, { trigger_data: JSON.parse(options.data) }, options.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {});
      print(`execution ${started.execution_id} ${started.status}`);
      if (!options.wait) return;
      await followExecution(c, workflowId, started.execution_id, print);
    });

  const executions = program.command('executions').description('executions of stored workflows');
  api(executions.command('list <workflow-id>'))
    .option('--limit <n>', 'at most this many', '20')
    .action(async (workflowId: string, options) => {
      for (const e of (await client(options).executions(workflowId, { limit: Number(options.limit) })).executions) {
        print(`${e.execution_id}  ${e.status.padEnd(9)}  ${e.started_at}  ${e.trigger_type}${e.error ? `  ${e.error}` : ''}`);
      }
    });
  api(executions.command('show <workflow-id> <execution-id>')).action(async (workflowId: string, executionId: string, options) => {
    print(JSON.stringify(await client(options).execution(workflowId, executionId), null, 2));
  });

  api(executions.command('retry <workflow-id> <execution-id>'))
    .description('retry the failed branches of a partly failed execution; what succeeded is reused')
    .option('--branches <names>', 'only these branches (comma-separated)')
    .option('--wait', 'follow the new execution until it ends')
    .action(async (workflowId: string, executionId: string, options) => {
      const c = client(options);
      const started = await c.retry(workflowId, executionId, options.branches ? String(options.branches).split(',').map((b) => b.trim()) : undefined);
      print(`execution ${started.execution_id} retries ${started.branches.join(', ')} of ${executionId}`);
      if (options.wait) await followExecution(c, workflowId, started.execution_id, print);
    });
  api(executions.command('rerun <workflow-id> <execution-id>'))
    .description('a new execution from a step on, reusing the recorded outputs of the steps before it')
    .requiredOption('--from <step>', 'the first step to run again')
    .option('--data <json>', 'new trigger data (default: the original execution\'s)')
    .option('--wait', 'follow the new execution until it ends')
    .action(async (workflowId: string, executionId: string, options) => {
      const c = client(options);
      const started = await c.rerun(workflowId, executionId, { from_step: options.from, ...(options.data ? { trigger_data: JSON.parse(options.data) } : {}) });
      print(`execution ${started.execution_id} reruns ${executionId} from ${options.from}`);
      if (options.wait) await followExecution(c, workflowId, started.execution_id, print);
    });

  const dlq = program.command('dlq').description('the dead-letter queue');
  api(dlq.command('list')).action(async (options) => {
    for (const t of (await client(options).dead()).tasks) print(`${t.id}  ${t.queue}  attempts=${t.attempts}/${t.max_attempts}  ${t.last_error ?? ''}`);
  });
  api(dlq.command('redrive <task-id>')).action(async (id: string, options) => {
    const result = await client(options).redrive(id);
    print(result.redriven ? `redriven ${id}: ${result.state}` : `${id} is not dead (${result.state}): unchanged`);
  });
}


/**
 * Prints an execution as it goes, from its journal over SSE (no polling): steps and polls as they
 * end or retry, each business state it enters with the current step's label and the ETA. Sets exit
 * code 1 unless it succeeds.
 */
async function followExecution(c: Client, workflowId: string, executionId: string, print: (line: string) => void): Promise<void> {
  const startedAt = new Map<string, number>();
  let state: string | null = null;
  for await (const event of c.follow(executionId)) {
    const { name, attempt, error, retryAt } = event.data;
    const at = Date.parse(event.timestamp);
    if (event.type === 'step.started' || event.type === 'poll.started') startedAt.set(name, at);
    if (event.type === 'step.started' && attempt > 1) print(`  ${name}: running (attempt ${attempt})`);
    else if ((event.type === 'step.started' || event.type === 'poll.started') && event.data.label) print(`  ${name}: ${event.data.label}`);
    if (event.type === 'step.completed' || event.type === 'poll.completed') print(`  ${name}: success ${at - (startedAt.get(name) ?? at)} ms${event.type === 'poll.completed' ? ` (${attempt} ${attempt === 1 ? 'poll' : 'polls'})` : ''}`);
    if (event.type === 'step.failed') print(`  ${name}: ${retryAt === null ? 'failed' : 'retrying'} — ${error}`);
    if (event.type === 'poll.attempted' && error) print(`  ${name}: retrying — ${error}`);
    if (event.type === 'poll.failed') print(`  ${name}: failed — ${error}`);
    if (event.type === 'poll.timed_out') print(`  ${name}: timed_out`);
    // parallel branches may enter the same state each: it is printed once
    if (event.type === 'state.changed' && name !== state) {
      state = name;
      const now = await c.execution(workflowId, executionId).catch(() => null);
      const eta = now?.eta_seconds === null || now?.eta_seconds === undefined || now.finished_at ? '' : `  ETA ~${Math.ceil(now.eta_seconds)} s`;
      print(`state ${name}${eta}`);
    }
  }
  const record = await c.execution(workflowId, executionId);
  print(`execution ${record.execution_id} ${record.status}${record.state ? ` ${record.state}` : ''}${record.error ? `: ${record.error}` : ''}`);
  if (record.status !== 'success') process.exitCode = 1;
}
