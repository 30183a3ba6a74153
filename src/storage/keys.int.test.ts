import { afterEach, beforeEach, describe } from 'vitest';
import { backends } from '../testing/backends.js';
import { keyConformance } from './conformance-keys.js';
import { openStore } from './open.js';
import type { Store } from './store.js';

// the api_keys part of the conformance suite alone (conformance.ts runs it too, with everything else)
describe.each(backends)('api keys on $name', (backend) => {
  let store: Store;
  beforeEach(async () => {
    store = await openStore(await backend.create());
  });
  afterEach(() => store.close());
  keyConformance({ store: () => store });
});
