import type { Store } from './store.js';
import { openSqliteStore } from './sqlite/store.js';
import { openPostgresStore } from './postgres/store.js';

/**
 * Opens the store a location names: a `postgres://` (or `postgresql://`) URL, or else a SQLite
 * file path (`:memory:` for a throwaway one). Migrations are applied on open.
 *
 * @example const store = await openStore('runledger.db')
 */
export async function openStore(location: string, options: { migrate?: boolean } = {}): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(location)) return openPostgresStore(location, options);
  return openSqliteStore(location, options);
}
