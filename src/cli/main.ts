import { Command } from 'commander';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createEngine, type Engine } from '../engine.js';
import type { Workflow } from '../runtime/workflow.js';
import { runDemo } from './demo.js';
import { formatEvent, formatTask } from './format.js';

/** Where the CLI reads its database: the flag, then RUNLEDGER_DATABASE, then DATABASE_URL, then ./runledger.db. */
function database(flag: string | undefined): string {
  return flag ?? process.env.RUNLEDGER_DATABASE ?? process.env.DATABASE_URL ?? 'runledger.db';
}

async function withEngine(options: { database?: string }, fn: (engine: Engine) => Promise<void>): Promise<void> {
  const engine = await createEngine({ database: database(options.database) });
  try {
    await fn(engine);
  } finally {
    await engine.close();
  }
}

/** The `runledger` command line. */
export async function main(argv: string[]): Promise<void> {
  const program = new Command('runledger').description('Durable execution engine: event journal, subscriptions and task queue.');
  const db = (cmd: Command) => cmd.option('-d, --database <location>', 'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)');

  db(program.command('demo'))
    .description('run a demo on the database: tasks with retries and a dead letter, watched live through a subscription')
    .action((options) => runDemo(database(options.database), (line) => console.log(line)));

  db(program.command('worker'))
    .description('run the workflows a module exports, on this database, until SIGTERM or SIGINT (running steps finish first)')
    .requiredOption('--workflows <module>', 'a JavaScript module whose exports are workflows (or arrays of them)')
    .action(async (options) => {
      const workflows = exportedWorkflows(await import(pathToFileURL(resolve(options.workflows)).href));
      if (workflows.length === 0) throw new Error(`${options.workflows} exports no workflow`);
      const engine = await createEngine({ database: database(options.database), workflows });
      console.log(`worker ${process.pid}: ${workflows.map((w) => w.name).join(', ')} on ${(await engine.store.status()).location}`);
      await new Promise((stop) => {
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
      });
      await engine.close();
      console.log(`worker ${process.pid}: stopped`);
    });

  db(program.command('status'))
    .description("print the store's health: schema version, event and task counts")
    .action((options) => withEngine(options, async (engine) => console.log(JSON.stringify(await engine.store.status(), null, 2))));

  db(program.command('events'))
    .description('print the journal, oldest first')
    .option('--stream <id>', 'one stream only')
    .option('--prefix <prefix>', 'streams starting with this')
    .option('--limit <n>', 'at most this many', '100')
    .action((options) =>
      withEngine(options, async (engine) => {
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

  await program.parseAsync(argv);
}

function exportedWorkflows(module: Record<string, unknown>): Workflow[] {
  const isWorkflow = (value: unknown): value is Workflow =>
    typeof value === 'object' && value !== null && typeof (value as Workflow).name === 'string' && typeof (value as Workflow).run === 'function';
  return [...new Set(Object.values(module).flatMap((value) => (Array.isArray(value) ? value : [value])).filter(isWorkflow))];
}
