import { dropPostgresTestDatabases } from './src/testing/databases.js';

/** Drops the databases of runs older than half an hour: a failed test's state stays that long, for inspection. */
export default async function setup(): Promise<void> {
  await dropPostgresTestDatabases();
}
