import { dirname, resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import type { Agent } from '../agents/agent.js';
import type { Tool } from '../agents/tools.js';
import { offlineModel } from '../models/offline.js';
import type { Model } from '../runtime/model.js';
import type { ReplyDelta } from '../chat/reply.js';
import type { RunledgerOptions } from '../config.js';
import { createEngine, type Engine } from '../engine.js';
import { createMetrics, type Metrics } from '../observe/metrics.js';
import type { Tracer } from '../observe/trace.js';
import type { RetentionPolicy } from '../retention/policy.js';
import type { Workflow } from '../runtime/workflow.js';
import { handedOutBase } from '../public-url.js';
import { loadSecretKey } from '../workflows/secrets.js';
import { prepareLocation } from '../storage/location.js';
export { checkLocation, isPostgresLocation } from '../storage/location.js';
import type { ProcessSettings } from '../storage/processes.js';
import type { KeyStore } from '../storage/store-keys.js';
import { differenceWarning, processSettings, settingDifferences } from '../process-settings.js';
import { packageVersion } from '../version.js';
import { assemble, type App } from './assemble.js';

export interface OpenAppOptions extends RunledgerOptions {
  /** RUNLEDGER_SECRET_KEY, or the key itself; without it a key file in `dataDir` is used (created on first start). */
  secretKey?: string | Buffer | undefined;
  /** Where the key file lives; default: the SQLite file's folder, else the working directory. */
  dataDir?: string;
  /** Hosts and CIDRs `http_request` steps and HTTP agents may reach though private (RUNLEDGER_HTTP_ALLOW). */
  allow?: string[];
  /** Run executions, sessions, AI replies, routing and schedules in this process too (default true). */
  workers?: boolean;
  /** The model that answers `role: user` chat messages; default the offline one. */
  chatModel?: Model;
  agents?: Agent[];
  /** The tools ledger agents call (`defineTool`). */
  tools?: Tool[];
  /** The agent of an inbound event that names none. Default `sample-agent`. */
  defaultAgent?: string;
  codeWorkflows?: Workflow[];
  logger?: Logger;
  /** Ages after which finished records are deleted (RUNLEDGER_RETENTION), by this process when it runs workers. */
  retention?: RetentionPolicy;
  /** Spans for requests, runs and steps (`startTracing`); the caller closes it after the app. */
  tracer?: Tracer | null;
  /**
   * The address other machines reach the API at (RUNLEDGER_PUBLIC_URL, `--public-url`): every
   * `wait_for_callback` URL and HTTP agent `report_url` starts with it. Checked here (absolute
   * http(s), no query or fragment).
   */
  publicUrl?: string | undefined;
  /**
   * The server's own listening URL (set by `startServer`): handed out when no `publicUrl` is set, unless it is a
   * wildcard address.
   */
  listeningUrl?: string;
  /**
   * Create the SQLite file's directory when it does not exist (`--create-dirs`); otherwise that is an error, before
   * anything is created.
   */
  createDirs?: boolean | undefined;
  /** What this process is, as other processes name it when its settings differ from theirs (default `app`). */
  role?: 'serve' | 'worker' | 'app';
  /** Tokens of AI replies as they are generated (the server forwards them to sockets). */
  onDelta?: (delta: ReplyDelta) => void;
}

/** The assembled product on its own engine: `close()` stops the consumers, then the engine. */
export interface OpenApp extends Omit<App, 'stop'> {
  engine: Engine;
  /** Prometheus metrics of this process (the server serves them on /metrics). */
  metrics: Metrics;
  /**
   * At start, one line per setting that changes what a step does (RUNLEDGER_HTTP_ALLOW, the public
   * URL, the model, the secret key, the version) in which another live process with workers on
   * this database differs from this one: a step runs with whichever process claims it. Empty
   * without workers (such a process runs no step).
   */
  settingsWarnings: string[];
  /** The API key table (issue 45): the server's door to it (`createApp`'s `keys`). */
  keys: KeyStore;
  close(): Promise<void>;
}

const isPostgres = (database: string) => /^postgres(ql)?:\/\//.test(database);

/** Where the secret key file lives: beside the SQLite file, else the working directory. */
export function dataDirFor(database: string): string {
  return isPostgres(database) ? process.cwd() : dirname(resolve(database));
}

/**
 * The engine on its database with the product assembled on it (`assemble`): the one start of
 * `runledger serve` (which adds HTTP), `runledger worker` and `runledger prune`.
 *
 * @example
 * const app = await openApp({ database: 'runledger.db', workers: true });
 * await app.workflows.executions.execute('wf_01J…');
 * await app.close();
 */
export async function openApp(options: OpenAppOptions = {}): Promise<OpenApp> {
  const {
    secretKey,
    dataDir,
    allow = [],
    workers = true,
    logger = pino(),
    chatModel = offlineModel(),
    agents,
    tools,
    defaultAgent,
    codeWorkflows,
    tracer,
    retention,
    publicUrl,
    listeningUrl,
    onDelta,
    createDirs,
    role = 'app',
    ...engineOptions
  } = options;
  // checked before anything opens: a bad setting is named at start, not at the first callback step
  const handedOut = handedOutBase({ publicUrl, listeningUrl });
  const database = engineOptions.database ?? 'runledger.db';
  // before anything opens: the key file's folder (the database's) used to be made for a mistyped path
  prepareLocation(database, { createDirs });
  // a key given is checked before anything opens; a key file is read or made only once the
  // database opened, so a start that cannot reach it leaves no new key file behind
  const given = Buffer.isBuffer(secretKey)
    ? secretKey
    : secretKey
      ? await loadSecretKey({ dataDir: '', env: secretKey })
      : null;
  const engine = await createEngine({ ...engineOptions, database, workers });
  try {
    const key = given ?? (await loadSecretKey({ dataDir: dataDir ?? dataDirFor(database) }));
    const metrics = createMetrics(engine.events, engine.operator, {
      concurrency: () => engine.runs.concurrency({ max: 10_000, since: false }),
    });
    if (tracer) engine.useTracer(tracer);
    try {
      const app = await assemble(engine, {
        secretKey: key,
        allow,
        logger,
        chatModel,
        workers,
        ...(handedOut ? { publicUrl: handedOut } : {}),
        ...(onDelta ? { onDelta } : {}),
        ...(retention ? { retention } : {}),
        ...(agents ? { agents } : {}),
        ...(tools ? { tools } : {}),
        ...(defaultAgent ? { defaultAgent } : {}),
        ...(codeWorkflows ? { codeWorkflows } : {}),
      });
      const { stop, ...rest } = app;
      const settingsWarnings = workers
        ? await compareSettings(
            engine,
            processSettings({
              role,
              allow,
              publicUrl,
              chatModel: chatModel.id,
              secretKey: key,
              version: packageVersion(),
            }),
          )
        : [];
      return {
        ...rest,
        engine,
        metrics,
        settingsWarnings,
        keys: engine.store,
        close: async () => {
          await stop();
          metrics.close();
          await engine.close();
        },
      };
    } catch (error) {
      metrics.close();
      throw error;
    }
  } catch (error) {
    await engine.close();
    throw error;
  }
}

/** Records this process's settings on its row, then compares them with the other live processes'. */
async function compareSettings(engine: Engine, settings: ProcessSettings): Promise<string[]> {
  await engine.liveness.describe(settings);
  const [listed, now] = await Promise.all([engine.operator.processes(), engine.operator.now()]);
  return settingDifferences({ id: engine.liveness.id, settings }, listed, now).map(differenceWarning);
}
