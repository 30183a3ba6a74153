import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { twoProcesses, type Process } from '../../testing/processes.js';
import { admitTurn, releaseTurn } from './turns.js';

/**
 * The turns of an ordering key, kept by the process that wrote them last (`WrittenViews`): the
 * key's next start or end takes them, but not once another process moved the key on. Two journals
 * on one database stand for two processes.
 */
describe.each(backends)('turns of an ordering key on $name', (backend) => {
  let here: Process;
  let there: Process;
  beforeEach(async () => {
    [here, there] = await twoProcesses(backend);
  });
  afterEach(async () => {
    for (const p of [here, there]) await p.store.close();
  });

  const admit = (p: Process, runId: string) => p.store.transaction((tx) => admitTurn(p.journal, tx, 'k', runId));
  const release = (p: Process, runId: string) => p.store.transaction((tx) => releaseTurn(p.journal, tx, 'k', runId));

  it("goes in start order across processes, reading the turns again after another process's start or end", async () => {
    expect(await admit(here, 'r1')).toBe(true);
    expect(await admit(there, 'r2')).toBe(false);
    // kept here with r1 active and nobody waiting: r3 must wait behind r2
    expect(await admit(here, 'r3')).toBe(false);
    expect(await release(here, 'r1')).toBe('r2');
    expect(await admit(here, 'r4')).toBe(false);
    expect(await release(there, 'r2')).toBe('r3');
    // a run that ends while it waits leaves the line
    expect(await release(here, 'r4')).toBeNull();
    expect(await release(here, 'r3')).toBeNull();
    expect(await admit(there, 'r5')).toBe(true);
  });

  it('puts a run in front of the first of its `ahead` runs still waiting; the active run keeps its turn', async () => {
    const ahead = (runId: string, of: string[]) =>
      here.store.transaction((tx) => admitTurn(here.journal, tx, 'k', runId, of));
    expect(await ahead('r1', ['r9'])).toBe(true);
    for (const r of ['r2', 'r3', 'r4']) expect(await admit(there, r)).toBe(false);
    // r1 is active: only the waiting ones are passed
    expect(await ahead('r5', ['r1', 'r3', 'r4'])).toBe(false);
    // none of them waits: behind every one
    expect(await ahead('r6', ['r1', 'r9'])).toBe(false);
    const order: string[] = [];
    for (let next = await release(there, 'r1'); next !== null; next = await release(there, next)) order.push(next);
    expect(order).toEqual(['r2', 'r5', 'r3', 'r4', 'r6']);
  });

  it('keeps nothing of a transaction that rolled back', async () => {
    expect(await admit(here, 'r1')).toBe(true);
    await expect(
      here.store.transaction(async (tx) => {
        await admitTurn(here.journal, tx, 'k', 'r2');
        throw new Error('after the start');
      }),
    ).rejects.toThrow('after the start');
    expect(await admit(there, 'r3')).toBe(false);
    expect(await release(here, 'r1')).toBe('r3');
  });
});
