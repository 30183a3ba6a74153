import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '../journal/journal.js';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { RUN_EVENT } from './events.js';
import { projectRunViews, readRunView } from './view.js';

/**
 * The run views a process keeps between its transactions (projectRunViews): a kept view is used
 * only for the append right after the version it was kept at, and only once its transaction
 * committed. Two journals on one database stand for two processes.
 */
describe.each(backends)('kept run views on $name', (backend) => {
  let stores: Store[];
  let journal: Journal;
  let other: Journal;
  beforeEach(async () => {
    const database = await backend.create();
    stores = [await openStore(database), await openStore(database)];
    [journal, other] = stores.map((store) => {
      const j = new Journal(store, { maxEventBytes: 1 << 20, maxEventsPerAppend: 1000 });
      projectRunViews(j);
      return j;
    }) as [Journal, Journal];
  });
  afterEach(async () => {
    for (const store of stores) await store.close();
  });

  const started = (seq: number, name: string) => ({ type: RUN_EVENT.stepStarted, data: { seq, name, attempt: 1 } });
  const names = async () => (await readRunView(stores[0]!, 'r1'))!.steps.map((s) => s.name);

  it('keeps nothing of a transaction that rolled back', async () => {
    await journal.append('run:r1', [{ type: RUN_EVENT.runStarted, data: { workflow: 'w', input: null } }]);
    await expect(
      stores[0]!.transaction(async (tx) => {
        await journal.append('run:r1', [started(1, 'rolled-back')], { tx });
        throw new Error('after the append');
      }),
    ).rejects.toThrow('after the append');
    // version 2 again, committed elsewhere: a view kept from the rolled-back append would match version 3
    await other.append('run:r1', [started(1, 'there')]);
    await journal.append('run:r1', [started(2, 'here')]);
    expect(await names()).toEqual(['there', 'here']);
  });

  it("reads the view again after another process's append", async () => {
    await journal.append('run:r1', [{ type: RUN_EVENT.runStarted, data: { workflow: 'w', input: null } }, started(1, 'here')]);
    await other.append('run:r1', [started(2, 'there')]);
    await journal.append('run:r1', [started(3, 'here again')]);
    expect(await names()).toEqual(['here', 'there', 'here again']);
    // and an event the view does not show still moves the version on
    await other.append('run:r1', [{ type: RUN_EVENT.signalSent, data: { name: 'go', payload: null } }]);
    await other.append('run:r1', [started(4, 'there again')]);
    await journal.append('run:r1', [started(5, 'last')]);
    expect(await names()).toEqual(['here', 'there', 'here again', 'there again', 'last']);
  });
});
