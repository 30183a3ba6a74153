import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { modelFromEnv } from '../models/env.js';
import { createLogger } from '../observe/log.js';
import { startTracing } from '../observe/otel.js';
import { parseRetention } from '../retention/policy.js';
import { withAuditAge } from '../retention/audit.js';
import { envValue } from '../settings.js';
import { ValidationError } from '../errors.js';
import { checkPublicUrl } from '../public-url.js';
import type { Workflow } from '../runtime/workflow.js';
import { startServer } from '../server/start.js';
import { parseAllowedOrigins } from '../server/origin.js';
import { dataDirFor, openApp } from '../app/open.js';
import { parseAllowlist } from '../workflows/actions/address.js';
import { loadAgents } from './agent.js';
import { loadModule } from './load-module.js';
import { runDemo } from './demo.js';
import { database, databaseOf, DEFAULT_URL, whole } from './options.js';
import type { Output } from './output.js';
import { loadSample, SAMPLE_WORKFLOWS, startSampleRun } from './sample.js';

/** The server and worker settings read from the environment (the only place they are read). */
export function serverEnv() {
  const env = (name: string) => envValue(process.env, name);
  const leaseMs = env('RUNLEDGER_LEASE_MS');
  const pollMs = env('RUNLEDGER_POLL_MS');
  const dataDir = env('RUNLEDGER_DATA_DIR');
  const headersMs = env('RUNLEDGER_HEADERS_TIMEOUT_MS');
  const requestMs = env('RUNLEDGER_REQUEST_TIMEOUT_MS');
  return {
    token: env('RUNLEDGER_TOKEN'),
    allowedOrigins: parseAllowedOrigins(env('RUNLEDGER_ALLOWED_ORIGINS')),
    secretKey: env('RUNLEDGER_SECRET_KEY'),
    publicUrl: env('RUNLEDGER_PUBLIC_URL'),
    allow: parseAllowlist(env('RUNLEDGER_HTTP_ALLOW')),
    ...(dataDir ? { dataDir } : {}),
    ...(leaseMs ? { leaseMs: whole('RUNLEDGER_LEASE_MS', leaseMs) } : {}),
    ...(pollMs ? { pollMs: whole('RUNLEDGER_POLL_MS', pollMs) } : {}),
    ...(headersMs ? { headersTimeoutMs: whole('RUNLEDGER_HEADERS_TIMEOUT_MS', headersMs) } : {}),
    ...(requestMs ? { requestTimeoutMs: whole('RUNLEDGER_REQUEST_TIMEOUT_MS', requestMs) } : {}),
    chatModel: modelFromEnv(process.env),
    retention: withAuditAge(parseRetention(env('RUNLEDGER_RETENTION')), env('RUNLEDGER_AUDIT_RETENTION')),
  };
}

/** Made on first use: nothing happens at import time. */
let logger: Logger | undefined;
export const log = (): Logger =>
  (logger ??= createLogger(envValue(process.env, 'RUNLEDGER_LOG_LEVEL'), Boolean(process.stdout.isTTY)));

export function untilSignal(): Promise<unknown> {
  return new Promise((stop) => {
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

/** `runledger serve`, `worker` and `demo`: the commands that open the database and do the work. */
export function serverCommands(program: Command, out: Output): void {
  database(program.command('demo'))
    .description(
      'run a demo on the database: tasks with retries and a dead letter, watched live through a subscription',
    )
    .action((options) => runDemo(databaseOf(options), (line) => out.line(line)));

  database(program.command('serve'))
    .description('run the HTTP API with workers on the database until SIGTERM or SIGINT')
    .option('--port <port>', 'port (default: $PORT or 8080)')
    .option('--host <host>', 'address to listen on; other than loopback needs RUNLEDGER_TOKEN', '127.0.0.1')
    .option('--sample', 'store the sample workflow if no workflow has its name')
    .option(
      '--workflows <module>',
      'a JavaScript or TypeScript module whose exported code workflows POST /runs (runledger start) may start',
    )
    .option(
      '--agents <module>',
      'a JavaScript or TypeScript module whose exports are agents (defineAgent) and tools (defineTool)',
    )
    .option(
      '--default-agent <name>',
      'the agent of an inbound event (POST /agent/events) that names none (default: sample-agent)',
    )
    .option('--no-workers', 'serve the API only: executions and AI replies run in other processes (runledger worker)')
    .option(
      '--public-url <url>',
      "the address services call back at (wait_for_callback URLs, HTTP agents' report_url): the load balancer's (default: $RUNLEDGER_PUBLIC_URL, else this server's own on a loopback or specific host)",
    )
    .option('--create-dirs', "create the SQLite file's directory if it does not exist")
    .action(async (options) => {
      const port = whole('--port', options.port ?? envValue(process.env, 'PORT') ?? '8080', 0, 65_535);
      const location = databaseOf(options);
      const env = serverEnv();
      const keyFile = env.secretKey ? null : join(env.dataDir ?? dataDirFor(location), 'secret.key');
      const newKey = keyFile !== null && !existsSync(keyFile);
      const codeWorkflows = options.workflows ? await workflowsOf(options.workflows) : [];
      const agents = options.agents ? await loadAgents(options.agents) : {};
      const stopped = untilSignal();
      const tracer = await startTracing(process.env);
      const server = await startServer({
        database: location,
        createDirs: options.createDirs,
        role: 'serve',
        host: options.host,
        port,
        workers: options.workers,
        codeWorkflows: options.sample && options.workers ? [...codeWorkflows, ...SAMPLE_WORKFLOWS] : codeWorkflows,
        logger: log(),
        ...(tracer ? { tracer } : {}),
        ...env,
        ...publicUrlFlag(options.publicUrl),
        ...agents,
        ...(options.defaultAgent ? { defaultAgent: options.defaultAgent } : {}),
      });
      if (newKey && insideGitWorkTree(keyFile!)) {
        out.line(
          `warning: created the secrets key ${keyFile} inside a git work tree: keep it out of commits (.gitignore), or set RUNLEDGER_SECRET_KEY`,
        );
      }
      for (const line of server.settingsWarnings) out.line(line);
      const url = server.url.replace('localhost', '127.0.0.1');
      const flags = url === DEFAULT_URL ? '' : ` --url ${url}`;
      if (options.sample) {
        const sample = await loadSample(server.workflows.definitions);
        // one execution of it (once per database: the key makes a restart return the same one), so the dashboard has a run to show
        await server.workflows.executions.execute(sample.id, {
          trigger_data: { name: 'Ada' },
          idempotencyKey: 'runledger-sample',
        });
        out.line(
          `sample workflow ${sample.id} '${sample.name}': try  npx runledger start ${sample.name}${flags} --input '{"name":"Ada"}' --wait`,
        );
        if (options.workers)
          out.line(
            `sample run (a retry, a sleep, a wait for a signal, a child run): ${server.url}/ui/runs/${await startSampleRun(server.engine)}`,
          );
      }
      if (codeWorkflows.length > 0)
        out.line(
          `code workflows: ${codeWorkflows.map((w) => w.name).join(', ')} (npx runledger start <name>${flags} --input '{}')`,
        );
      out.line(`runledger ${process.pid} serving ${server.url} on ${(await server.engine.operator.status()).location}`);
      out.line(`dashboard: ${server.url}/ui`);
      await stopped;
      await server.close();
      await tracer?.close();
      out.line(`runledger ${process.pid}: stopped`);
    });

  database(program.command('worker'))
    .description(
      'run executions of stored workflows, and the code workflows a module exports, until SIGTERM or SIGINT (running steps finish first)',
    )
    .option('--workflows <module>', 'a JavaScript or TypeScript module whose exports are workflows (or arrays of them)')
    .option(
      '--agents <module>',
      'a JavaScript or TypeScript module whose exports are agents (defineAgent) and tools (defineTool)',
    )
    .option(
      '--public-url <url>',
      "the address services call back at (wait_for_callback URLs, HTTP agents' report_url): the API's load balancer (default: $RUNLEDGER_PUBLIC_URL; without it such steps fail)",
    )
    .option('--create-dirs', "create the SQLite file's directory if it does not exist")
    .action(async (options) => {
      const workflows = options.workflows ? await workflowsOf(options.workflows) : [];
      const agents = options.agents ? await loadAgents(options.agents) : {};
      const stopped = untilSignal();
      const location = databaseOf(options);
      const { token: _token, allowedOrigins: _origins, ...env } = serverEnv();
      const tracer = await startTracing(process.env);
      const app = await openApp({
        database: location,
        createDirs: options.createDirs,
        role: 'worker',
        logger: log(),
        workers: true,
        codeWorkflows: workflows,
        tracer,
        ...env,
        ...publicUrlFlag(options.publicUrl),
        ...agents,
      });
      for (const line of app.settingsWarnings) out.line(line);
      out.line(
        `worker ${process.pid}: stored workflows, sessions, chat replies, triggers${workflows.map((w) => `, ${w.name}`).join('')} on ${(await app.engine.operator.status()).location}`,
      );
      await stopped;
      await app.close();
      await tracer?.close();
      out.line(`worker ${process.pid}: stopped`);
    });
}

/** `--public-url` over RUNLEDGER_PUBLIC_URL, checked under the flag's name. */
function publicUrlFlag(flag: string | undefined): { publicUrl?: string } {
  return flag === undefined ? {} : { publicUrl: checkPublicUrl(flag, '--public-url') };
}

/** The workflows a `--workflows` module (JavaScript or TypeScript) exports, directly or in arrays; `load` as `loadModule`'s. */
export async function workflowsOf(module: string, load?: Parameters<typeof loadModule>[3]): Promise<Workflow[]> {
  const found = exportedWorkflows(await loadModule('--workflows', module, undefined, load));
  if (found.length === 0) throw new ValidationError('--workflows', `${module} exports no workflow`);
  return found;
}

function exportedWorkflows(values: unknown[]): Workflow[] {
  const isWorkflow = (value: unknown): value is Workflow =>
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Workflow).name === 'string' &&
    typeof (value as Workflow).run === 'function';
  return [...new Set(values.flatMap((value) => (Array.isArray(value) ? value : [value])).filter(isWorkflow))];
}

function insideGitWorkTree(path: string): boolean {
  for (let dir = dirname(resolve(path)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return true;
    if (dirname(dir) === dir) return false;
  }
}
