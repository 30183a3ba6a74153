import { describe } from 'vitest';
import { storeConformance } from './conformance.js';
import { openSqliteStore } from './sqlite/store.js';
import { createSqlitePath } from '../testing/databases.js';

describe('sqlite store', () =>
  storeConformance(
    async () => createSqlitePath(),
    async (path) => openSqliteStore(path),
  ));
