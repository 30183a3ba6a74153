import type { Command } from 'commander';
import { client, database, databaseOf, direct, existingDatabase, remote } from './options.js';
import { databaseSource, serverSource, type Source } from './source.js';

/** A read command: the server (`--url`, the default) or, with `--database`, the database itself. */
export function reader(cmd: Command): Command {
  return database(remote(cmd), 'read this database directly instead of a server: SQLite file or postgres:// URL');
}

/** The Source the options name, closed after `fn`. */
export async function withSource<T>(options: Record<string, any>, fn: (source: Source) => Promise<T>): Promise<T> {
  const source = direct(options)
    ? await databaseSource(existingDatabase(databaseOf(options)))
    : serverSource(client(options));
  try {
    return await fn(source);
  } finally {
    await source.close();
  }
}
