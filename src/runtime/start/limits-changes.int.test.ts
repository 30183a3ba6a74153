import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import { RUN_QUEUE } from '../runtime.js';
import { workflow } from '../workflow.js';
import { LimitReachedError, readSlots, slotStream } from './limits.js';
import { admitTurn, releaseTurn } from './turns.js';

/** A run that holds its slot until it is signalled `go`. */
const gate = workflow('gate', { concurrency: [{ key: 'input.k', limit: 2 }] }, async (ctx, _input: { k: string }) =>
  ctx.waitForEvent<string>('go'),
);

const held = async (engine: { store: Parameters<typeof readSlots>[0] }, slot: string) =>
  (await readSlots(engine.store, slot))?.held ?? [];

describe.each(backends)('changes to a key of a concurrency limit on $name', (backend) => {
  it('tells the runs waiting the new "n of m" when a start lowers the limit, and again when one raises it', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [gate] });
    try {
      for (const id of ['g-1', 'g-2', 'g-3']) await engine.start(gate, { k: 'a' }, { id });
      expect((await engine.run('g-3')).waitingFor).toBe('concurrency gate:a — 2 of 2 in use');
      // a start under a lower limit: it waits too, and so does g-3, now under the new limit
      await engine.start(gate, { k: 'a' }, { id: 'g-4', concurrency: [{ key: 'input.k', limit: 1 }] });
      expect((await engine.run('g-4')).waitingFor).toBe('concurrency gate:a — 2 of 1 in use');
      expect((await engine.run('g-3')).waitingFor).toBe('concurrency gate:a — 2 of 1 in use');
      expect((await engine.run('g-3')).status).toBe('waiting');
      // raised to 3: g-3 is let in, g-4 waits under the limit in force
      await engine.start(gate, { k: 'a' }, { id: 'g-5', concurrency: [{ key: 'input.k', limit: 3 }] });
      expect(await held(engine, 'gate:a')).toEqual(['g-1', 'g-2', 'g-3']);
      expect((await engine.run('g-4')).waitingFor).toBe('concurrency gate:a — 3 of 3 in use');
      expect((await engine.run('g-5')).waitingFor).toBe('concurrency gate:a — 3 of 3 in use');
      for (const id of ['g-1', 'g-2', 'g-3', 'g-4', 'g-5']) {
        await eventually(async () => (await held(engine, 'gate:a')).includes(id));
        await engine.signal(id, 'go', id);
        expect(await engine.runtime.handle(id).result()).toBe(id);
      }
    } finally {
      await close();
    }
  });

  it('journals a drop_newest refusal on the key even when the caller’s transaction rolls back with it', async () => {
    const once = workflow(
      'once-tx',
      { concurrency: [{ key: 'input.user', limit: 1, onLimit: 'drop_newest' }] },
      async (ctx) => ctx.waitForEvent<string>('go'),
    );
    const { engine, close } = await testEngine(backend, { workflows: [once] });
    try {
      await engine.start(once, { user: '1' }, { id: 't-1' });
      const refused = engine.store.transaction((tx) => engine.start(once, { user: '1' }, { id: 't-2', tx }));
      await expect(refused).rejects.toThrow(LimitReachedError);
      const dropped = await eventually(async () => {
        const events = await engine.journal.readStream(slotStream('once-tx:1'));
        return events.find((e) => e.type === RUN_EVENT.runDropped);
      });
      expect(dropped.data).toEqual({ runId: 't-2', reason: 'concurrency once-tx:1 — 1 of 1 in use' });
      expect(await held(engine, 'once-tx:1')).toEqual(['t-1']);
      await engine.signal('t-1', 'go', 'ok');
      expect(await engine.runtime.handle('t-1').result()).toBe('ok');
    } finally {
      await close();
    }
  });

  it('begins a run let in after its notBefore has passed at once, no poll or timer needed', async () => {
    // a poll a minute apart: a pass that waited for one would not begin within `eventually`'s 10 s
    const { engine, close } = await testEngine(backend, { workflows: [gate], pollMs: 60_000 });
    try {
      await engine.start(gate, { k: 'nb' }, { id: 'nb-1' });
      await engine.start(gate, { k: 'nb' }, { id: 'nb-2' });
      const notBefore = (await engine.store.now()) + 300;
      await engine.start(gate, { k: 'nb' }, { id: 'nb-3', notBefore });
      expect((await engine.run('nb-3')).status).toBe('waiting');
      // nothing of nb-3 is queued while it waits for its slot
      const passes = async () =>
        (await engine.queue.list({ queue: RUN_QUEUE })).filter((t) => t.orderingKey === 'nb-3');
      expect(await passes()).toEqual([]);
      const began = async () =>
        (await engine.journal.readStream(runStream('nb-3'))).some((e) => e.type === RUN_EVENT.waitStarted);
      await eventually(async () => (await engine.store.now()) > notBefore + 50);
      expect(await began()).toBe(false);
      await engine.signal('nb-1', 'go', 'x');
      await engine.runtime.handle('nb-1').result();
      // let in past its notBefore: its pass is queued due now and begins
      await eventually(async () => (await held(engine, 'gate:nb')).includes('nb-3'));
      await eventually(began);
      await engine.signal('nb-3', 'go', 'y');
      expect(await engine.runtime.handle('nb-3').result()).toBe('y');
      await engine.signal('nb-2', 'go', 'z');
      expect(await engine.runtime.handle('nb-2').result()).toBe('z');
    } finally {
      await close();
    }
  });

  it('reads a key stored before lines were rows (its waiting runs inline) and moves them to rows as it goes on', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [gate] });
    try {
      const { store, journal } = engine;
      await store.slotPut({ slot: 'old', state: { active: 'r1', waiting: ['r2', 'r3'] } });
      expect(await readSlots(store, 'old')).toEqual({ limit: 1, held: ['r1'], waiting: ['r2', 'r3'] });
      expect(await store.transaction((tx) => admitTurn(journal, tx, 'old', 'r4'))).toBe(false);
      expect(await readSlots(store, 'old')).toEqual({ limit: 1, held: ['r1'], waiting: ['r2', 'r3', 'r4'] });
      expect(await store.transaction((tx) => releaseTurn(journal, tx, 'old', 'r1'))).toBe('r2');
      expect(await store.transaction((tx) => releaseTurn(journal, tx, 'old', 'r3'))).toBeNull();
      expect(await readSlots(store, 'old')).toEqual({ limit: 1, held: ['r2'], waiting: ['r4'] });
      expect(await store.transaction((tx) => releaseTurn(journal, tx, 'old', 'r2'))).toBe('r4');
      expect(await readSlots(store, 'old')).toEqual({ limit: 1, held: ['r4'], waiting: [] });
    } finally {
      await close();
    }
  });
});
