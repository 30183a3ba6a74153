import { Command } from 'commander';
import { packageVersion } from '../version.js';
import { agentCommands } from './agent.js';
import { auditCommands } from './audit.js';
import { batchCommands } from './batches.js';
import { channelCommands } from './channel.js';
import { functionCommands } from './functions.js';
import { limitCommands } from './limits.js';
import { keyCommands } from './keys.js';
import { devCommands } from './dev.js';
import { mockServicesCommands } from './mock-services.js';
import { notificationCommands } from './notifications.js';
import { operatorCommands } from './operator.js';
import { databaseOf } from './options.js';
import { opsCommands } from './ops.js';
import { output, type Output } from './output.js';
import { queueCommands } from './queues.js';
import { replayCommands } from './replay.js';
import { runCommands } from './runs.js';
import { scheduleCommands } from './schedules.js';
import { serverCommands } from './server.js';
import { startCommands } from './start.js';
import { taskCommands } from './tasks.js';
import { templateCommands } from './templates.js';
import { triggerCommands } from './trigger.js';
import { workflowCommands } from './workflows.js';

/** The command line's output: colours on a terminal, plain when piped or with NO_COLOR. */
const stdout = (): Output =>
  output((text) => process.stdout.write(text), Boolean(process.stdout.isTTY) && !process.env.NO_COLOR);

/**
 * The `runledger` command line. `serve`, `worker` and `demo` open the database (`--database`,
 * `$RUNLEDGER_DATABASE`); every other command talks to a running server (`--url`, `$RUNLEDGER_URL`),
 * and the read commands can read the database directly instead (`--database`).
 */
export async function main(argv: string[], out: Output = stdout()): Promise<void> {
  await cliProgram(out).parseAsync(argv);
}

/** The command tree, unparsed: `main` runs it, `npm run docs:config` documents its flags. */
export function cliProgram(out: Output = stdout()): Command {
  const program = new Command('runledger')
    .description('Durable execution engine: event journal, durable workflows, task queue, HTTP API.')
    .version(packageVersion(), '-V, --version', 'print the version')
    // the program's options come before a command, so a command may have its own --version (functions register)
    .enablePositionalOptions()
    .addHelpText(
      'after',
      '\nStart a run: runledger start <workflow> --input \'{"name":"ada"}\' --wait (a stored workflow by name or id, or a code workflow by name).\nServer: --url (default $RUNLEDGER_URL or http://127.0.0.1:8080), --token ($RUNLEDGER_TOKEN).\nDatabase: --database (default $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db).',
    );
  const line = (text: string) => out.line(text);
  serverCommands(program, out);
  startCommands(program, out);
  runCommands(program, out);
  replayCommands(program, out);
  taskCommands(program, out);
  workflowCommands(program, out);
  batchCommands(program, out);
  templateCommands(program, out);
  functionCommands(program, out);
  limitCommands(program, out);
  keyCommands(program, out);
  queueCommands(program, out);
  notificationCommands(program, out);
  auditCommands(program, out);
  scheduleCommands(program, out);
  channelCommands(program, out);
  triggerCommands(program, line);
  agentCommands(program, line);
  mockServicesCommands(program, line);
  devCommands(program, line);
  operatorCommands(program, line);
  opsCommands(program, line, (flag) => databaseOf({ ...(flag === undefined ? {} : { database: flag }) }));
  return program;
}
