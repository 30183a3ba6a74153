import { dropPostgresTestDatabases } from './src/testing/databases.js';

/** Drops the databases of the previous run: a failed test's state stays until then, for inspection. */
export default async function setup(): Promise<void> {
  await dropPostgresTestDatabases();
}
