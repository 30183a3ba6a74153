import { createPostgresDatabase, createSqlitePath } from './databases.js';

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** A location (file path or URL) of a fresh, empty database. */
  create(): Promise<string>;
}

/** Both backends; a test that runs `describe.each(backends)` runs unchanged on each. */
export const backends: Backend[] = [
  { name: 'sqlite', create: async () => createSqlitePath() },
  { name: 'postgres', create: createPostgresDatabase },
];
