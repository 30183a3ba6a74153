import { describe } from 'vitest';
import { storeConformance } from './conformance.js';
import { openPostgresStore } from './postgres/store.js';
import { createPostgresDatabase } from '../testing/databases.js';

describe('postgres store', () => storeConformance(createPostgresDatabase, (url) => openPostgresStore(url)));
