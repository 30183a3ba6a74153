import { Command } from 'commander';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { createLogger } from '../observe/log.js';
import { startTracing } from '../observe/otel.js';
import { pathToFileURL } from 'node:url';
import { createEngine, type Engine } from '../engine.js';
import type { Workflow } from '../runtime/workflow.js';
import { providerFromEnv } from '../chat/providers.js';
import { startServices } from '../server/services.js';
import { dataDirFor, startServer } from '../server/start.js';
import { parseAllowlist } from '../workflows/actions/address.js';
import { loadSecretKey } from '../workflows/secrets.js';
import { apiCommands } from './api.js';
import { channelCommands } from './channel.js';
import { triggerCommands } from './trigger.js';
import { printTimeline, runCommands } from './runs.js';
import { runDemo } from './demo.js';
import { mockServicesCommands } from './mock-services.js';
import { loadSample } from './sample.js';
import { formatEvent, formatTask } from './format.js';
import { opsCommands } from './ops.js';
import { envValue } from '../settings.js';
import { parseRetention } from '../retention/policy.js';

/** Where the CLI reads its database: the flag, then RUNLEDGER_DATABASE / RUNLEDGER_DB, then DATABASE_URL, then ./runledger.db. */
function database(flag: string | undefined): string {
  return flag ?? envValue(process.env, 'RUNLEDGER_DATABASE') ?? 'runledger.db';
}

/** The server and worker settings read from the environment (the only place they are read). */
function serverEnv() {
  const env = (name: string) => envValue(process.env, name);
  return {
    token: env('RUNLEDGER_TOKEN'),
    secretKey: env('RUNLEDGER_SECRET_KEY'),
    allow: parseAllowlist(env('RUNLEDGER_HTTP_ALLOW')),
    ...(env('RUNLEDGER_DATA_DIR') ? { dataDir: env('RUNLEDGER_DATA_DIR')! } : {}),
    ...(env('RUNLEDGER_LEASE_MS') ? { leaseMs: Number(env('RUNLEDGER_LEASE_MS')) } : {}),
    ...(env('RUNLEDGER_POLL_MS') ? { pollMs: Number(env('RUNLEDGER_POLL_MS')) } : {}),
    chatProvider: providerFromEnv(process.env),
    retention: parseRetention(envValue(process.env, 'RUNLEDGER_RETENTION')),
  };
}

function untilSignal(): Promise<unknown> {
  return new Promise((stop) => {
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

async function withEngine(options: { database?: string }, fn: (engine: Engine) => Promise<void>): Promise<void> {
  const engine = await createEngine({ database: database(options.database) });
  try {
    await fn(engine);
  } finally {
    await engine.close();
  }
}

/** Made on first use: nothing happens at import time. */
let logger: Logger | undefined;
const log = (): Logger => (logger ??= createLogger(process.env.RUNLEDGER_LOG_LEVEL, Boolean(process.stdout.isTTY)));

/** The `runledger` command line. */
export async function main(argv: string[]): Promise<void> {
  await cliProgram().parseAsync(argv);
}

/** The command tree, unparsed: `main` runs it, `npm run docs:config` documents its flags. */
export function cliProgram(): Command {
  const program = new Command('runledger').description('Durable execution engine: event journal, subscriptions and task queue.');
  const db = (cmd: Command) => cmd.option('-d, --database <location>', 'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)');

  db(program.command('demo'))
    .description('run a demo on the database: tasks with retries and a dead letter, watched live through a subscription')
    .action((options) => runDemo(database(options.database), (line) => console.log(line)));

  program
    .command('serve')
    .description('run the HTTP API with workers on this database until SIGTERM or SIGINT')
    .option('--port <port>', 'port (default: $PORT or 8080)')
    .option('--host <host>', 'address to listen on; other than loopback needs RUNLEDGER_TOKEN', '127.0.0.1')
    .option('--db <file>', 'SQLite file (default: $RUNLEDGER_DB or ./runledger.db)')
    .option('--database-url <url>', 'PostgreSQL URL (default: $DATABASE_URL)')
    .option('--sample', 'store the sample workflow if no workflow has its name')
    .option('--no-workers', 'serve the API only: executions and AI replies run in other processes (runledger worker)')
    .action(async (options) => {
      const stopped = untilSignal();
      const tracer = await startTracing(process.env);
      const server = await startServer({ database: database(options.db ?? options.databaseUrl), host: options.host, port: Number(options.port ?? envValue(process.env, 'PORT') ?? 8080), workers: options.workers, logger: log(), ...(tracer ? { tracer } : {}), ...serverEnv() });
      if (options.sample) {
        const sample = await loadSample(server.workflows.definitions);
        console.log(`sample workflow ${sample.id} '${sample.name}': try  npx runledger run ${sample.id} --data '{"name":"Ada"}' --wait`);
      }
      console.log(`runledger ${process.pid} serving ${server.url} on ${(await server.engine.store.status()).location}`);
      await stopped;
      await server.close();
      await tracer?.close();
      console.log(`runledger ${process.pid}: stopped`);
    });

  db(program.command('worker'))
    .description('run executions of stored workflows, and the code workflows a module exports, until SIGTERM or SIGINT (running steps finish first)')
    .option('--workflows <module>', 'a JavaScript module whose exports are workflows (or arrays of them)')
    .action(async (options) => {
      const stopped = untilSignal();
      const workflows = options.workflows ? exportedWorkflows(await import(pathToFileURL(resolve(options.workflows)).href)) : [];
      if (options.workflows && workflows.length === 0) throw new Error(`${options.workflows} exports no workflow`);
      const env = serverEnv();
      const location = database(options.database);
      const { chatProvider, secretKey, allow, dataDir, retention, ...engineEnv } = env;
      const key = await loadSecretKey({ dataDir: dataDir ?? dataDirFor(location), ...(secretKey ? { env: secretKey } : {}) });
      const engine = await createEngine({ database: location, ...engineEnv });
      const tracer = await startTracing(process.env);
      engine.useTracer(tracer);
      const services = await startServices(engine, { secretKey: key, allow, logger: log(), chatProvider, workers: true, codeWorkflows: workflows, retention });
      console.log(`worker ${process.pid}: stored workflows, sessions, chat replies, triggers${workflows.map((w) => `, ${w.name}`).join('')} on ${(await engine.store.status()).location}`);
      await stopped;
      await services.stop();
      await engine.close();
      await tracer?.close();
      console.log(`worker ${process.pid}: stopped`);
    });

  db(program.command('status'))
    .description("print the store's health: schema version, event and task counts")
    .action((options) => withEngine(options, async (engine) => console.log(JSON.stringify(await engine.store.status(), null, 2))));

  db(program.command('events [run-id]'))
    .description("a run's timeline (time, type, detail); without a run id, the journal, oldest first")
    .option('--follow', 'with a run id: keep printing until the run ends')
    .option('--stream <id>', 'one stream only, raw')
    .option('--prefix <prefix>', 'streams starting with this, raw')
    .option('--limit <n>', 'without a run id: at most this many', '100')
    .action((runId: string | undefined, options) =>
      withEngine(options, async (engine) => {
        if (runId !== undefined) return printTimeline(engine, runId, { follow: Boolean(options.follow), print: (line) => console.log(line) });
        const limit = Number(options.limit);
        const events = options.stream
          ? await engine.journal.readStream(options.stream, { limit })
          : await engine.journal.readAll({ limit, ...(options.prefix ? { streamPrefix: options.prefix } : {}) });
        for (const event of events) console.log(formatEvent(event));
      }),
    );

  const tasks = program.command('tasks').description('inspect and redrive tasks');
  db(tasks.command('list'))
    .option('--queue <name>')
    .option('--state <state>', 'ready | running | completed | dead')
    .option('--limit <n>', 'at most this many', '100')
    .action((options) =>
      withEngine(options, async (engine) => {
        for (const task of await engine.queue.list({ queue: options.queue, state: options.state, limit: Number(options.limit) })) console.log(formatTask(task));
      }),
    );
  db(tasks.command('history <id>'))
    .description("a task's attempts and outcome")
    .action((id, options) => withEngine(options, async (engine) => void (await engine.queue.history(id)).forEach((e) => console.log(formatEvent(e)))));
  db(tasks.command('redrive <id>'))
    .description('put a dead task back in its queue')
    .action((id, options) =>
      withEngine(options, async (engine) => {
        const { task, redriven } = await engine.queue.redrive(id);
        console.log(redriven ? `redriven: ${formatTask(task)}` : `not dead, unchanged: ${formatTask(task)}`);
      }),
    );

  db(program.command('subscriptions'))
    .description('list subscriptions with their cursor and parked events')
    .action((options) =>
      withEngine(options, async (engine) => {
        for (const sub of await engine.store.subscriptionList()) {
          const parked = await engine.parked(sub.name);
          console.log(`${sub.name}  cursor=${sub.cursor || '(start)'}  ${sub.blockedReason ? `BLOCKED: ${sub.blockedReason}` : 'flowing'}  parked=${parked.filter((p) => p.status === 'parked').length}`);
        }
      }),
    );

  apiCommands(program, (line) => console.log(line));
  channelCommands(program, (line) => console.log(line));
  triggerCommands(program, (line) => console.log(line));
  runCommands(program, (line) => console.log(line));
  mockServicesCommands(program, (line) => console.log(line));
  opsCommands(program, (line) => console.log(line), database);
  return program;
}

function exportedWorkflows(module: Record<string, unknown>): Workflow[] {
  const isWorkflow = (value: unknown): value is Workflow =>
    typeof value === 'object' && value !== null && typeof (value as Workflow).name === 'string' && typeof (value as Workflow).run === 'function';
  return [...new Set(Object.values(module).flatMap((value) => (Array.isArray(value) ? value : [value])).filter(isWorkflow))];
}
