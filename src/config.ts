import { ValidationError } from './errors.js';

export interface RunledgerOptions {
  /** A SQLite file path (default `runledger.db`) or a `postgres://` URL. */
  database?: string;
  /** Largest task payload or result, serialized. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Largest event data, serialized. Default 1 MiB. */
  maxEventBytes?: number;
  /** Most events in one append (bulk enqueues append one per task). Default 100,000. */
  maxEventsPerAppend?: number;
  /** Attempts of a task before it is dead, unless it says otherwise. Default 5. */
  defaultMaxAttempts?: number;
  /** Fallback poll of workers and subscriptions when no wake-up arrives. Default 1000 ms. */
  pollMs?: number;
  /** How long a worker's claim on a task (and so on a run), or a process's hold on a subscription, lasts without renewal. Default 30 s. */
  leaseMs?: number;
  /** Passes of runs this process executes at once. Default 10. */
  runConcurrency?: number;
  /** A step's input or output, a signal's payload, a run's input or result whose JSON is larger goes to the blob store, the journal keeping a reference. Default 256 KiB. */
  blobThresholdBytes?: number;
  /** Largest such value, serialized. Default 256 MiB. */
  maxValueBytes?: number;
  /** Runs whose history a worker keeps in memory after their pass, so their next pass here reads only new events. 0: none. Default 500. */
  replayCacheRuns?: number;
}

export type Config = Readonly<Required<RunledgerOptions>>;

/**
 * Defaults and validation, pure: environment variables are read by the CLI, not here.
 *
 * @example resolveConfig({ database: 'postgres://localhost/app' }).maxPayloadBytes // 1048576
 */
export function resolveConfig(options: RunledgerOptions = {}): Config {
  const config = {
    database: options.database ?? 'runledger.db',
    maxPayloadBytes: options.maxPayloadBytes ?? 1024 * 1024,
    maxEventBytes: options.maxEventBytes ?? 1024 * 1024,
    maxEventsPerAppend: options.maxEventsPerAppend ?? 100_000,
    defaultMaxAttempts: options.defaultMaxAttempts ?? 5,
    pollMs: options.pollMs ?? 1000,
    leaseMs: options.leaseMs ?? 30_000,
    runConcurrency: options.runConcurrency ?? 10,
    blobThresholdBytes: options.blobThresholdBytes ?? 256 * 1024,
    maxValueBytes: options.maxValueBytes ?? 256 * 1024 * 1024,
    replayCacheRuns: options.replayCacheRuns ?? 500,
  };
  if (typeof config.database !== 'string' || config.database === '')
    throw new ValidationError('database', 'must be a file path or a postgres:// URL');
  for (const key of [
    'maxPayloadBytes',
    'maxEventBytes',
    'maxEventsPerAppend',
    'defaultMaxAttempts',
    'pollMs',
    'leaseMs',
    'runConcurrency',
    'blobThresholdBytes',
    'maxValueBytes',
  ] as const) {
    const value = config[key];
    if (!Number.isInteger(value) || value < 1)
      throw new ValidationError(key, `must be a whole number ≥ 1 (got ${value})`);
  }
  if (!Number.isInteger(config.replayCacheRuns) || config.replayCacheRuns < 0)
    throw new ValidationError('replayCacheRuns', `must be a whole number ≥ 0 (got ${config.replayCacheRuns})`);
  return Object.freeze(config);
}
