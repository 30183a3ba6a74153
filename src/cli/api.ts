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
      // the journal, live: each step as it starts, fails or completes, without polling
      const startedAt = new Map<string, number>();
      for await (const event of c.follow(started.execution_id)) {
        const { name, attempt, error, retryAt } = event.data;
        const at = Date.parse(event.timestamp);
        if (event.type === 'step.started') startedAt.set(name, at);
        if (event.type === 'step.started' && attempt > 1) print(`  ${name}: running (attempt ${attempt})`);
        if (event.type === 'step.completed') print(`  ${name}: success ${at - (startedAt.get(name) ?? at)} ms`);
        if (event.type === 'step.failed') print(`  ${name}: ${retryAt === null ? 'failed' : 'retrying'} — ${error}`);
      }
      const record = await c.execution(workflowId, started.execution_id);
      print(`execution ${record.execution_id} ${record.status}${record.error ? `: ${record.error}` : ''}`);
      if (record.status !== 'success') process.exitCode = 1;
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

  const dlq = program.command('dlq').description('the dead-letter queue');
  api(dlq.command('list')).action(async (options) => {
    for (const t of (await client(options).dead()).tasks) print(`${t.id}  ${t.queue}  attempts=${t.attempts}/${t.max_attempts}  ${t.last_error ?? ''}`);
  });
  api(dlq.command('redrive <task-id>')).action(async (id: string, options) => {
    const result = await client(options).redrive(id);
    print(result.redriven ? `redriven ${id}: ${result.state}` : `${id} is not dead (${result.state}): unchanged`);
  });
}

