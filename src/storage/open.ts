import { explainConnectError, prepareLocation } from './location.js';
import type { Store } from './store.js';
import { openSqliteStore } from './sqlite/store.js';
import { openPostgresStore } from './postgres/store.js';

export interface OpenStoreOptions {
  /** Apply pending migrations (default true). */
  migrate?: boolean;
  /** Create the SQLite file's directory when it does not exist (default: that is an error). */
  createDirs?: boolean | undefined;
}

/**
 * Opens the store a location names: a `postgres://` (or `postgresql://`) URL, or else a SQLite
 * file path (`:memory:` for a throwaway one). Migrations are applied on open. Another URL scheme,
 * or a SQLite file in a directory that does not exist, is refused before anything is created; a
 * PostgreSQL server that cannot be reached is named with the fix (`DatabaseUnavailableError`).
 *
 * @example const store = await openStore('runledger.db')
 */
export async function openStore(location: string, options: OpenStoreOptions = {}): Promise<Store> {
  const { createDirs, ...open } = options;
  if (prepareLocation(location, { createDirs }) === 'sqlite') return openSqliteStore(location, open);
  try {
    return await openPostgresStore(location, open);
  } catch (error) {
    throw explainConnectError(location, error) ?? error;
  }
}
