import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { RunledgerError, ValidationError } from '../errors.js';

/** The forms a database location takes, as errors list them. */
export const ACCEPTED_LOCATIONS = 'a file path (SQLite) or postgres://user@host:5432/db';

const POSTGRES = /^postgres(ql)?:\/\//i;
/** A URL scheme (`mysql://`, `postgress://`, `file://`): a Windows drive (`C:\`) has no `//`. */
const SCHEME = /^([a-z][a-z0-9+.-]*):\/\//i;

export const isPostgresLocation = (location: string): boolean => POSTGRES.test(location);

/**
 * The dialect a location names, or a ValidationError under `field` for a URL of another scheme:
 * a mistyped `postgress://…` used to become a SQLite file in nested directories of that name.
 * Pure: nothing is looked at or created.
 *
 * @example checkLocation('mysql://db/app', '--database') // throws "--database: unknown scheme 'mysql://' — use …"
 */
export function checkLocation(location: string, field = 'database'): 'sqlite' | 'postgres' {
  if (typeof location !== 'string' || location.trim() === '')
    throw new ValidationError(field, `must be ${ACCEPTED_LOCATIONS}`);
  if (POSTGRES.test(location)) return 'postgres';
  const scheme = SCHEME.exec(location);
  if (scheme) throw new ValidationError(field, `unknown scheme '${scheme[1]}://' — use ${ACCEPTED_LOCATIONS}`);
  return 'sqlite';
}

/**
 * Checks a location before anything is opened or created for it: its scheme, and for a SQLite
 * file that its directory exists. A missing directory is made only when `createDirs` asks for it
 * (a mistyped path used to become a tree of new directories without a word).
 *
 * @example prepareLocation('/srv/runledger/app.db', { createDirs: true })
 */
export function prepareLocation(
  location: string,
  options: { createDirs?: boolean | undefined } = {},
): 'sqlite' | 'postgres' {
  const dialect = checkLocation(location);
  if (dialect === 'postgres' || location === ':memory:') return dialect;
  const dir = dirname(resolve(location));
  if (existsSync(dir)) return dialect;
  if (!options.createDirs)
    throw new ValidationError(
      'database',
      `the directory ${dir} does not exist: create it first, or pass --create-dirs (createDirs: true)`,
    );
  mkdirSync(dir, { recursive: true });
  return dialect;
}

/** The URL with its password as `***`: what an error or a report may show. */
export function maskedUrl(location: string): string {
  try {
    const url = new URL(location);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return location;
  }
}

/** The database could not be reached or entered; the message names the URL (no password) and the fix. */
export class DatabaseUnavailableError extends RunledgerError {
  override readonly code = 'database_unavailable';
  override name = 'DatabaseUnavailableError';
}

/**
 * A PostgreSQL connection failure as a person can act on it: a missing database says how to
 * create it, a refused or unknown host asks whether PostgreSQL runs there, a refused login says
 * so; null for any other failure (a migration's, say), which keeps its own error. The original is the `cause`.
 */
export function explainConnectError(location: string, error: unknown): DatabaseUnavailableError | null {
  const shown = maskedUrl(location);
  let url: URL | null = null;
  try {
    url = new URL(location);
  } catch {}
  const host = url?.hostname || 'localhost';
  const port = url?.port || '5432';
  // without a user or database in the URL, createdb and the server fall back to the same defaults
  const user = url?.username ? decodeURIComponent(url.username) : null;
  const db = url?.pathname.slice(1) ? decodeURIComponent(url.pathname.slice(1)) : null;
  const code = errorCode(error);
  const text = error instanceof Error ? error.message : String(error);
  const say = (message: string) => new DatabaseUnavailableError(`database: ${message}`, { cause: error });
  if (code === '3D000')
    return say(
      `${shown}: database ${db ? `'${db}' ` : ''}does not exist — create it: createdb -h ${host} -p ${port}${user ? ` -U ${user}` : ''}${db ? ` ${db}` : ''}`,
    );
  if (code === 'ECONNREFUSED') return say(`${shown}: connection refused — is PostgreSQL running on ${host}:${port}?`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return say(`${shown}: no host named '${host}' — is the host in the URL right?`);
  if (code === '28P01' || code === '28000')
    return say(
      `${shown}: authentication failed${user ? ` for user '${user}'` : ''} — check the user and password in the URL (${text})`,
    );
  if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH')
    return say(`${shown}: ${text} — is PostgreSQL reachable on ${host}:${port}?`);
  return null;
}

/** A pg error's SQLSTATE, or a socket error's code (Node reports a name that resolves to several addresses as an AggregateError). */
function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const inner = (error as { errors?: unknown[] } | null)?.errors;
  return Array.isArray(inner) ? inner.map(errorCode).find((c) => c !== undefined) : undefined;
}
