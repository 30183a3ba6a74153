import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError } from '../errors.js';
import { Journal } from '../journal/journal.js';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { projectSessions, readSession, sessionStream } from './view.js';

/**
 * The session views a process keeps between its transactions (projectSessions): a kept view is
 * used only for the session's next event, and only once its transaction committed. Two journals on
 * one database stand for two processes.
 */
describe.each(backends)('kept session views on $name', (backend) => {
  let stores: Store[];
  let here: Journal;
  let there: Journal;
  beforeEach(async () => {
    const database = await backend.create();
    stores = [await openStore(database), await openStore(database)];
    [here, there] = stores.map((store) => {
      const journal = new Journal(store, { maxEventBytes: 1 << 20, maxEventsPerAppend: 1000 });
      projectSessions(journal);
      return journal;
    }) as [Journal, Journal];
  });
  afterEach(async () => {
    for (const store of stores) await store.close();
  });

  const record = (journal: Journal, type: string) => journal.append(sessionStream('s1'), [{ type, data: { agent: 'a' } }]);

  it("reads the view again after another process's event, and keeps nothing of a rollback", async () => {
    await record(here, 'SESSION_INITIATED');
    await record(there, 'AGENT_INVOCATION_STARTED');
    // kept here at version 1, the session is at 2: a kept view would refuse this as following SESSION_INITIATED
    await record(here, 'AGENT_INVOCATION_SUCCEEDED');
    expect(await readSession(stores[0]!, 's1')).toMatchObject({ status: 'running', events_count: 3, last_event: 'AGENT_INVOCATION_SUCCEEDED' });
    await expect(
      stores[0]!.transaction(async (tx) => {
        await here.append(sessionStream('s1'), [{ type: 'AGENT_ENTRYPOINT_STARTED', data: {} }], { tx });
        throw new Error('after the append');
      }),
    ).rejects.toThrow('after the append');
    // version 4 is another process's now: a view kept of the rolled-back append (ENTRYPOINT_STARTED at 4) would let this follow it
    await record(there, 'SESSION_FAILED');
    await expect(record(here, 'AGENT_ENTRYPOINT_FAILED')).rejects.toThrow(ConflictError);
    expect(await readSession(stores[0]!, 's1')).toMatchObject({ status: 'failed', events_count: 4, last_event: 'SESSION_FAILED' });
  });
});
