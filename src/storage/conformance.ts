import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from './store.js';
import { agentLedgerConformance } from './conformance-agents.js';
import { journalConformance } from './conformance-journal.js';
import { subscriptionConformance } from './conformance-subscriptions.js';
import { taskConformance } from './conformance-tasks.js';
import { insertClaimConformance } from './conformance-claims.js';
import { concurrencyConformance } from './conformance-concurrency.js';
import { taskFlowConformance } from './conformance-task-flow.js';
import { longrunConformance } from './conformance-longrun.js';
import { maintenanceConformance } from './conformance-maintenance.js';
import { readConformance } from './conformance-reads.js';
import { appendConformance } from './conformance-appends.js';
import { processConformance } from './conformance-processes.js';
import { projectionConformance } from './conformance-projections.js';
import { rateConformance } from './conformance-rates.js';
import { slotConformance } from './conformance-slots.js';
import { keyConformance } from './conformance-keys.js';

/**
 * The semantics every backend must have. It runs unchanged against each (`sqlite.int.test.ts`,
 * `postgres.int.test.ts`); `create` gives the location of a fresh, empty database and `open`
 * opens a store on a location, so a test can open a second "process" on the same database.
 */
export function storeConformance(create: () => Promise<string>, open: (location: string) => Promise<Store>): void {
  let location: string;
  let store: Store;
  const others: Store[] = [];
  const openAnother = async () => {
    const another = await open(location);
    others.push(another);
    return another;
  };
  beforeEach(async () => {
    location = await create();
    store = await open(location);
  });
  afterEach(async () => {
    for (const another of others.splice(0)) await another.close();
    await store.close();
  });

  journalConformance({ store: () => store, openAnother });
  projectionConformance({ store: () => store });
  subscriptionConformance({ store: () => store });
  taskConformance({ store: () => store, openAnother });
  insertClaimConformance({ store: () => store });
  concurrencyConformance({ store: () => store, openAnother });
  taskFlowConformance({ store: () => store, openAnother });
  longrunConformance({ store: () => store, openAnother });
  agentLedgerConformance({ store: () => store });
  maintenanceConformance(() => store);
  readConformance({ store: () => store });
  appendConformance({ store: () => store });
  processConformance({ store: () => store });
  rateConformance({ store: () => store, openAnother });
  slotConformance({ store: () => store });
  keyConformance({ store: () => store });

  describe('migrations', () => {
    it('lets two processes open one database at once', async () => {
      const [a, b] = await Promise.all([openAnother(), openAnother()]);
      await a.eventAppend({ appends: [{ streamId: 'm', events: [{ type: 'A', data: {} }] }] });
      expect(await b.eventReadStream({ streamId: 'm' })).toHaveLength(1);
      expect((await b.status()).schemaVersion).toBe((await store.status()).schemaVersion);
    });
  });
}
