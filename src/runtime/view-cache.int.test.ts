import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '../journal/journal.js';
import { openStore } from '../storage/open.js';
import type { Store } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { RUN_EVENT } from './events.js';
import { projectRunViews, readRunView, type CommittedViews } from './view.js';

/**
 * The run views a process keeps between its transactions (projectRunViews): a kept view is used
 * only for the append right after the version it was kept at, and only once its transaction
 * committed. Two journals on one database stand for two processes.
 */
describe.each(backends)('kept run views on $name', (backend) => {
  let stores: Store[];
  let journal: Journal;
  let other: Journal;
  let views: CommittedViews;
  beforeEach(async () => {
    const database = await backend.create();
    stores = [await openStore(database), await openStore(database)];
    const [here, there] = stores.map((store) => {
      const j = new Journal(store, { maxEventBytes: 1 << 20, maxEventsPerAppend: 1000 });
      return { j, views: projectRunViews(j) };
    });
    [journal, other, views] = [here!.j, there!.j, here!.views];
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

  it('gives the status and a copy of the output of the view committed here at exactly the version asked for, nothing of a rollback or of another process', async () => {
    await journal.append('run:r1', [{ type: RUN_EVENT.runStarted, data: { workflow: 'w', input: null } }, started(1, 'here')]);
    const stored = (await readRunView(stores[0]!, 'r1'))!;
    expect(views.committed('r1', 2)).toEqual({ status: stored.status, output: null, error: null });
    expect(views.committed('r1', 1)).toBeUndefined();
    await expect(
      stores[0]!.transaction(async (tx) => {
        await journal.append('run:r1', [started(2, 'rolled-back')], { tx });
        throw new Error('after the append');
      }),
    ).rejects.toThrow('after the append');
    expect(views.committed('r1', 3)).toBeUndefined();
    await other.append('run:r1', [started(2, 'there')]);
    expect(views.committed('r1', 3)).toBeUndefined();
    await journal.append('run:r1', [started(3, 'here again'), { type: RUN_EVENT.runCompleted, data: { output: { n: 1 } } }]);
    const copy = views.committed('r1', 5)!;
    expect(copy).toEqual({ status: 'success', output: { n: 1 }, error: null });
    (copy.output as { n: number }).n = 2;
    expect(views.committed('r1', 5)!.output).toEqual({ n: 1 });
    expect((await readRunView(stores[0]!, 'r1'))!.steps.map((s) => s.name)).toEqual(['here', 'there', 'here again']);
  });
});
