import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { twoProcesses, type Process } from '../../testing/processes.js';
import { RUN_EVENT } from '../events.js';
import { projectRunViews, readRunView, type CommittedViews } from './view.js';

/**
 * The run views a process keeps between its transactions (projectRunViews): a kept view is used
 * only for the append right after the version it was kept at, and only once its transaction
 * committed. Two journals on one database stand for two processes.
 */
describe.each(backends)('kept run views on $name', (backend) => {
  let here: Process;
  let there: Process;
  let views: CommittedViews;
  beforeEach(async () => {
    [here, there] = await twoProcesses(backend);
    views = projectRunViews(here.journal);
    projectRunViews(there.journal);
  });
  afterEach(async () => {
    for (const p of [here, there]) await p.store.close();
  });

  const started = (seq: number, name: string) => ({ type: RUN_EVENT.stepStarted, data: { seq, name, attempt: 1 } });
  const names = async () => (await readRunView(here.store, 'r1'))!.steps.map((s) => s.name);

  it('keeps nothing of a transaction that rolled back', async () => {
    await here.journal.append('run:r1', [{ type: RUN_EVENT.runStarted, data: { workflow: 'w', input: null } }]);
    await expect(
      here.store.transaction(async (tx) => {
        await here.journal.append('run:r1', [started(1, 'rolled-back')], { tx });
        throw new Error('after the append');
      }),
    ).rejects.toThrow('after the append');
    // version 2 again, committed elsewhere: a view kept from the rolled-back append would match version 3
    await there.journal.append('run:r1', [started(1, 'there')]);
    await here.journal.append('run:r1', [started(2, 'here')]);
    expect(await names()).toEqual(['there', 'here']);
  });

  it("reads the view again after another process's append", async () => {
    await here.journal.append('run:r1', [
      { type: RUN_EVENT.runStarted, data: { workflow: 'w', input: null } },
      started(1, 'here'),
    ]);
    await there.journal.append('run:r1', [started(2, 'there')]);
    await here.journal.append('run:r1', [started(3, 'here again')]);
    expect(await names()).toEqual(['here', 'there', 'here again']);
    // and an event the view does not show still moves the version on
    await there.journal.append('run:r1', [{ type: RUN_EVENT.signalSent, data: { name: 'go', payload: null } }]);
    await there.journal.append('run:r1', [started(4, 'there again')]);
    await here.journal.append('run:r1', [started(5, 'last')]);
    expect(await names()).toEqual(['here', 'there', 'here again', 'there again', 'last']);
  });

  it('gives the status and a copy of the output of the view committed here at exactly the version asked for, nothing of a rollback or of another process', async () => {
    await here.journal.append('run:r1', [
      { type: RUN_EVENT.runStarted, data: { workflow: 'w', input: null } },
      started(1, 'here'),
    ]);
    const stored = (await readRunView(here.store, 'r1'))!;
    expect(views.committed('r1', 2)).toEqual({ status: stored.status, output: null, error: null });
    expect(views.committed('r1', 1)).toBeUndefined();
    await expect(
      here.store.transaction(async (tx) => {
        await here.journal.append('run:r1', [started(2, 'rolled-back')], { tx });
        throw new Error('after the append');
      }),
    ).rejects.toThrow('after the append');
    expect(views.committed('r1', 3)).toBeUndefined();
    await there.journal.append('run:r1', [started(2, 'there')]);
    expect(views.committed('r1', 3)).toBeUndefined();
    await here.journal.append('run:r1', [
      started(3, 'here again'),
      { type: RUN_EVENT.runCompleted, data: { output: { n: 1 } } },
    ]);
    const copy = views.committed('r1', 5)!;
    expect(copy).toEqual({ status: 'success', output: { n: 1 }, error: null });
    (copy.output as { n: number }).n = 2;
    expect(views.committed('r1', 5)!.output).toEqual({ n: 1 });
    expect((await readRunView(here.store, 'r1'))!.steps.map((s) => s.name)).toEqual(['here', 'there', 'here again']);
  });
});
