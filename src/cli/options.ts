import { existsSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { Client } from '../client/client.js';
import { ValidationError } from '../errors.js';
import { checkLocation, isPostgresLocation } from '../app/open.js';

/** The one default database: `--database`, else $RUNLEDGER_DATABASE, else $DATABASE_URL, else ./runledger.db. */
export const DATABASE_HELP =
  'SQLite file or postgres:// URL (default: $RUNLEDGER_DATABASE, $DATABASE_URL, ./runledger.db)';
export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** Adds the options of a command that talks to a running server (`runledger serve`). */
export function remote(cmd: Command): Command {
  return cmd
    .option('--url <url>', `the server (default: $RUNLEDGER_URL or ${DEFAULT_URL})`)
    .option('--token <token>', 'bearer token (default: $RUNLEDGER_TOKEN)')
    .option('--json', 'print JSON (for scripts)');
}

/**
 * Adds `--database`, and the spellings of earlier versions as hidden aliases for one version
 * (`-d`, `--db`, `--database-url`).
 */
export function database(cmd: Command, help = DATABASE_HELP): Command {
  return cmd
    .addOption(new Option('-d, --database <location>', help))
    .addOption(new Option('--db <file>').hideHelp())
    .addOption(new Option('--database-url <url>').hideHelp());
}

/**
 * Where a command that opens the database opens it: the flags, then the environment (read here, at
 * the edge). A URL of another scheme than postgres:// is refused naming the flag or variable it came from.
 */
export function databaseOf(options: { database?: string; db?: string; databaseUrl?: string }): string {
  const env = process.env;
  // an empty variable is an unset one
  const [source, location] = (
    [
      ['--database', options.database],
      ['--db', options.db],
      ['--database-url', options.databaseUrl],
      ['RUNLEDGER_DATABASE', env.RUNLEDGER_DATABASE || undefined],
      ['RUNLEDGER_DB', env.RUNLEDGER_DB || undefined],
      ['DATABASE_URL', env.DATABASE_URL || undefined],
    ] as const
  ).find(([, value]) => value !== undefined) ?? ['--database', 'runledger.db'];
  checkLocation(location!, source);
  return location!;
}

/** The database a read opens: it must exist already (a read never creates one). */
export function existingDatabase(location: string): string {
  if (!isPostgresLocation(location) && location !== ':memory:' && !existsSync(location)) {
    throw new ValidationError(
      '--database',
      `no database at ${location} (a read never creates one; \`runledger serve\` does)`,
    );
  }
  return location;
}

/** Did the caller ask for the database directly (a flag, not the environment)? Reads go to the server otherwise. */
export function direct(options: { database?: string; db?: string; databaseUrl?: string }): boolean {
  return options.database !== undefined || options.db !== undefined || options.databaseUrl !== undefined;
}

/** The client the options name. */
export function client(options: { url?: string; token?: string }): Client {
  return new Client({
    url: options.url ?? (process.env.RUNLEDGER_URL || DEFAULT_URL),
    token: options.token ?? (process.env.RUNLEDGER_TOKEN || undefined),
  });
}

/** A whole number in [min, max], named by its flag when it is not. */
export function whole(flag: string, value: string, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!/^\d+$/.test(String(value).trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new ValidationError(flag, `must be a whole number from ${min} to ${max} (got '${value}')`);
  }
  return n;
}

/** JSON given on the command line, named by its flag when it is not JSON. */
export function json(flag: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ValidationError(flag, `not JSON: ${(error as Error).message}`);
  }
}

/** One of `allowed`, named by its flag when it is not. */
export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new ValidationError(flag, `must be one of ${allowed.join(', ')} (got '${value}')`);
  return value as T;
}

/** The flags a printed command needs to reach the same server (`--url` when one was given). */
export function urlFlags(options: { url?: string }): string {
  return options.url ? ` --url ${options.url}` : '';
}
