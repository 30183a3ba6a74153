import type { Command } from 'commander';
import type { SessionService } from '../agents/service.js';
import { dirname, resolve } from 'node:path';
import { checkLocation } from '../app/open.js';
import type { Engine } from '../engine.js';
import { startMockServices } from '../mock-services/index.js';
import { versionTag } from '../runtime/start/versions.js';
import type { Workflow } from '../runtime/workflow.js';
import { envValue } from '../settings.js';
import type { ModuleStatus } from '../server/routes/dev.js';
import { startServer } from '../server/start.js';
import { loadAgents } from './agent.js';
import { freshImport } from './fresh-import.js';
import { whole } from './options.js';
import { log, serverEnv, untilSignal, workflowsOf } from './server.js';
import { watchFolder } from './watch-folder.js';

/** Where `runledger dev` keeps its runs unless `--database` says otherwise: a folder of its own, beside the code. */
const DEV_DATABASE = '.runledger/dev.db';

/**
 * `runledger dev`: the API, the dashboard and workers on a local SQLite file, the `--workflows`
 * and `--agents` modules loaded as they are (TypeScript too) and loaded again when a file under
 * their folder changes.
 *
 * @example
 * runledger dev --workflows ./src/workflows.ts
 * // dashboard: http://127.0.0.1:8080/ui
 * // (after an edit) reloaded --workflows ./src/workflows.ts: greet@5d1c0e7a9b21 (new runs)
 */
export function devCommands(program: Command, print: (line: string) => void): void {
  program
    .command('dev')
    .description(
      'develop on this machine: the API, the dashboard and workers on a local SQLite file, ' +
        'reloading the --workflows and --agents modules on each change, until SIGINT or SIGTERM',
    )
    .option(
      '--workflows <module>',
      'a JavaScript or TypeScript module whose exported workflows are served and reloaded',
    )
    .option(
      '--agents <module>',
      'a JavaScript or TypeScript module whose exports are agents and tools, reloaded for new sessions',
    )
    .option('-d, --database <location>', `SQLite file or postgres:// URL (default: ${DEV_DATABASE})`)
    .option('--port <port>', 'port (default: $PORT or 8080)')
    .option(
      '--mock-services [port]',
      'also run the mock services (runledger mock-services) on this port (default 9090)',
    )
    .action(async (options) => {
      const port = whole('--port', options.port ?? envValue(process.env, 'PORT') ?? '8080', 0, 65_535);
      const database: string = options.database ?? DEV_DATABASE;
      checkLocation(database, '--database');
      const workflows = options.workflows ? await workflowsOf(options.workflows, freshImport) : [];
      const agents = options.agents ? await loadAgents(options.agents, freshImport) : {};
      const modules: ModuleStatus[] = options.workflows
        ? [{ flag: '--workflows', path: options.workflows, error: null, at: now(), serving: workflows.map(named) }]
        : [];
      const agentModule: ModuleStatus | null = options.agents
        ? { flag: '--agents', path: options.agents, error: null, at: now(), serving: [] }
        : null;
      if (agentModule) modules.push(agentModule);
      const stopped = untilSignal();
      const mock =
        options.mockServices === undefined
          ? null
          : await startMockServices({ port: mockPort(options.mockServices), speed: 1 });
      const server = await startServer({
        ...serverEnv(),
        database,
        createDirs: true,
        role: 'serve',
        port,
        codeWorkflows: workflows,
        logger: log(),
        devStatus: () => modules,
        ...agents,
      });
      for (const line of server.settingsWarnings) print(line);
      const url = server.url.replace('localhost', '127.0.0.1');
      print(`runledger dev ${process.pid} serving ${url} on ${database}`);
      if (workflows.length > 0)
        print(`workflows: ${workflows.map(named).join(', ')} (--workflows ${options.workflows})`);
      if (agentModule) {
        agentModule.serving = servingAgents(server.sessions, 1);
        print(`agents: ${agentModule.serving.join(', ')} (--agents ${options.agents})`);
      }
      if (mock) print(`mock services: ${mock.url}`);
      print(`dashboard: ${url}/ui`);
      const watching = [
        ...(options.workflows
          ? [watchFolder(dirname(resolve(modules[0]!.path)), reloader(server.engine, modules[0]!, workflows, print))]
          : []),
        ...(agentModule
          ? [watchFolder(dirname(resolve(agentModule.path)), agentReloader(server.sessions, agentModule, print))]
          : []),
      ];
      await stopped;
      for (const unwatch of watching) unwatch();
      await server.close();
      await mock?.close();
      print(`runledger dev ${process.pid}: stopped`);
    });
}

function mockPort(flag: string | true): number {
  return flag === true ? 9090 : whole('--mock-services', flag, 0, 65_535);
}

const named = (wf: Workflow) => `${wf.name}@${wf.version}`;
const now = () => new Date().toISOString();

/**
 * Loads the module again and registers the workflows whose code changed: new runs start on the
 * version registered last, and a run in flight keeps running on the version it started on
 * (registered still). A module that fails to load is reported (in the terminal and in `status`,
 * which the dashboard shows), and the versions registered keep serving.
 */
function reloader(
  engine: Engine,
  status: ModuleStatus,
  initial: Workflow[],
  print: (line: string) => void,
): () => Promise<void> {
  /** Each workflow's version as the module last gave it, before any suffix. */
  const loaded = new Map(initial.map((wf) => [wf.name, wf.version]));
  let loads = 0;
  return async () => {
    const module = status.path;
    let workflows: Workflow[];
    status.at = now();
    try {
      workflows = await workflowsOf(module, freshImport);
    } catch (error) {
      status.error = error instanceof Error ? error.message : String(error);
      print(`✗ ${status.error}`);
      print('  the previous version keeps serving: fix the file and save it again');
      return;
    }
    status.error = null;
    loads++;
    const known = new Set(engine.runtime.tags());
    const changed = workflows
      .filter((wf) => loaded.get(wf.name) !== wf.version)
      // an edit undone brings back a version registered before, not the newest: a suffix makes it the newest again
      .map((wf) => (known.has(versionTag(wf.name, wf.version)) ? { ...wf, version: `${wf.version}.${loads}` } : wf));
    for (const wf of workflows) loaded.set(wf.name, wf.version);
    engine.register(...changed);
    status.serving = workflows.map((wf) => named(engine.runtime.registered(wf.name) ?? wf));
    const list = workflows.map((wf) => {
      const now = changed.find((c) => c.name === wf.name);
      return now ? `${named(now)} (new runs)` : `${wf.name} unchanged`;
    });
    print(`reloaded --workflows ${module}: ${list.join(', ')}`);
  };
}

/** The agents serving new sessions, each with the version of the session workflow that runs them (`runledger.session@1`). */
function servingAgents(sessions: SessionService, version: string | number): string[] {
  return sessions.names().map((name) => `${name} (runledger.session@${version})`);
}

/**
 * Loads the agents module again and gives the sessions a new version of the session workflow that runs them (`SessionService.reload`): sessions started from now on, a conversation's next turn too, run
 * the new code; a session in flight finishes on the version it started on, so its journal replays on the code that
 * wrote it. A module that fails to load (or exports two agents of one name) is reported as a broken workflow module
 * is, and the agents loaded last keep serving.
 */
function agentReloader(sessions: SessionService, status: ModuleStatus, print: (line: string) => void) {
  let version = '1';
  return async () => {
    status.at = now();
    try {
      version = sessions.reload(await loadAgents(status.path, freshImport));
      status.error = null;
      status.serving = servingAgents(sessions, version);
      print(
        `reloaded --agents ${status.path}: ${sessions.names().join(', ')} on runledger.session@${version} (new sessions)`,
      );
    } catch (error) {
      status.error = error instanceof Error ? error.message : String(error);
      print(`✗ ${status.error}`);
      print('  the previous agents keep serving: fix the file and save it again');
    }
  };
}
