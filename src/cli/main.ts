import { Command } from 'commander';
import { packageVersion } from '../version.js';
import { agentCommands } from './agent.js';
import { channelCommands } from './channel.js';
import { mockServicesCommands } from './mock-services.js';
import { operatorCommands } from './operator.js';
import { output, type Output } from './output.js';
import { runCommands } from './runs.js';
import { serverCommands } from './server.js';
import { taskCommands } from './tasks.js';
import { triggerCommands } from './trigger.js';
import { workflowCommands } from './workflows.js';

/**
 * The `runledger` command line. `serve`, `worker` and `demo` open the database (`--database`,
 * `$RUNLEDGER_DATABASE`); every other command talks to a running server (`--url`, `$RUNLEDGER_URL`),
 * and the read commands can read the database directly instead (`--database`).
 */
export async function main(argv: string[], out: Output = output((text) => process.stdout.write(text), Boolean(process.stdout.isTTY) && !process.env.NO_COLOR)): Promise<void> {
  const program = new Command('runledger')
    .description('Durable execution engine: event journal, durable workflows, task queue, HTTP API.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .addHelpText('after', '\nServer: --url (default $RUNLEDGER_URL or http://127.0.0.1:8080), --token ($RUNLEDGER_TOKEN).\nDatabase: --database (default $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db).');
  serverCommands(program, out);
  runCommands(program, out);
  taskCommands(program, out);
  workflowCommands(program, out);
  channelCommands(program, out);
  triggerCommands(program, (line) => out.line(line));
  agentCommands(program, (line) => out.line(line));
  mockServicesCommands(program, (line) => out.line(line));
  operatorCommands(program, (line) => out.line(line));
  await program.parseAsync(argv);
}
