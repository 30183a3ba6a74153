import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, ValidationError } from '../../errors.js';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { runStream } from '../pass/history.js';
import { workflow } from '../workflow.js';
import { LimitReachedError, readSlots, slotStream } from './limits.js';

/** Runs in flight at once, counted by the runs' own first and last steps. */
function counter() {
  const now = new Map<string, number>();
  const most = new Map<string, number>();
  return {
    enter: (key: string) => {
      now.set(key, (now.get(key) ?? 0) + 1);
      most.set(key, Math.max(most.get(key) ?? 0, now.get(key)!));
    },
    leave: (key: string) => void now.set(key, now.get(key)! - 1),
    most: (key: string) => most.get(key) ?? 0,
  };
}

/** The runs in the order they were let in after waiting: the position of the `run.admitted` that let each begin. */
async function admittedOrder(engine: Engine, ids: string[]): Promise<string[]> {
  const at = new Map<string, number>();
  for (const id of ids) {
    const events = await engine.journal.readStream(runStream(id));
    const admitted = events.find(
      (e) => e.type === RUN_EVENT.runAdmitted && (e.data as { waitingFor: unknown }).waitingFor === null,
    );
    if (admitted) at.set(id, admitted.position);
  }
  return ids.filter((id) => at.has(id)).sort((a, b) => at.get(a)! - at.get(b)!);
}

const held = (engine: Engine, slot: string) => readSlots(engine.store, slot).then((s) => s?.held ?? []);

describe.each(backends)('keyed concurrency of runs on $name', (backend) => {
  it('never runs more than the limit of a key at once; the rest wait (status waiting, their reason), in start order', async () => {
    const c = counter();
    const busy = workflow(
      'busy',
      { concurrency: [{ key: 'input.k', limit: 2 }] },
      async (ctx, input: { k: string; n: number }) => {
        await ctx.step('enter', async () => c.enter(input.k));
        await ctx.sleep('hold', '30ms');
        await ctx.step('leave', async () => c.leave(input.k));
        return input.n;
      },
    );
    const { engine, close } = await testEngine(backend, { workflows: [busy] });
    try {
      const ids = Array.from({ length: 7 }, (_, n) => `busy-${n}`);
      const runs = [];
      for (const [n, id] of ids.entries()) runs.push(await engine.start(busy, { k: 'a', n }, { id }));
      const other = await engine.start(busy, { k: 'b', n: 9 }, { id: 'busy-b' });
      const waiting = await engine.run('busy-6');
      expect(waiting.status).toBe('waiting');
      expect(waiting.waitingFor).toMatch(/^concurrency busy:a — 2 of 2 in use$/);
      expect(await Promise.all(runs.map((r) => r.result()))).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(await other.result()).toBe(9);
      expect(c.most('a')).toBe(2);
      expect(await admittedOrder(engine, ids)).toEqual(ids.slice(2));
      expect(await held(engine, 'busy:a')).toEqual([]);
    } finally {
      await close();
    }
  });

  it('holds a slot of each of two limits: one per user and two for the workflow', async () => {
    const c = counter();
    const both = workflow(
      'both',
      { concurrency: [{ key: 'input.user', limit: 1 }, { limit: 2 }] },
      async (ctx, input: { user: string }) => {
        await ctx.step('enter', async () => {
          c.enter(input.user);
          c.enter('all');
        });
        await ctx.sleep('hold', '20ms');
        await ctx.step('leave', async () => {
          c.leave(input.user);
          c.leave('all');
        });
        return input.user;
      },
    );
    const { engine, close } = await testEngine(backend, { workflows: [both] });
    try {
      const users = ['u1', 'u1', 'u2', 'u3', 'u1', 'u2', 'u4', 'u3'];
      const runs = [];
      for (const user of users) runs.push(await engine.start(both, { user }));
      expect(await Promise.all(runs.map((r) => r.result()))).toEqual(users);
      expect(c.most('all')).toBeLessThanOrEqual(2);
      for (const user of ['u1', 'u2', 'u3', 'u4']) expect(c.most(user)).toBe(1);
    } finally {
      await close();
    }
  });

  const gated = workflow(
    'gated-limit',
    { concurrency: [{ limit: 1 }] },
    async (ctx, input: { n: number; tenant?: string }) => {
      await ctx.step('begin', async () => input.n);
      return `${input.n}:${await ctx.waitForEvent<string>('go')}`;
    },
  );

  it('takes a changed limit from the newest start: a raised one lets waiting runs in at once', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [gated] });
    try {
      for (const n of [1, 2, 3, 4]) await engine.start(gated, { n }, { id: `g-${n}` });
      expect(await held(engine, 'gated-limit')).toEqual(['g-1']);
      await engine.start(gated, { n: 5 }, { id: 'g-5', concurrency: [{ limit: 3 }] });
      expect(await held(engine, 'gated-limit')).toEqual(['g-1', 'g-2', 'g-3']);
      expect((await engine.run('g-4')).status).toBe('waiting');
      // its reason under the limit in force now
      expect((await engine.run('g-4')).waitingFor).toBe('concurrency gated-limit — 3 of 3 in use');
      await eventually(
        async () => (await engine.run('g-3')).status === 'waiting' && !(await engine.run('g-3')).waitingFor,
      );
      expect((await engine.run('g-2')).waitingFor ?? null).toBeNull();
      for (const n of [1, 2, 3, 4, 5]) await engine.signal(`g-${n}`, 'go', 'ok');
      for (const n of [1, 2, 3, 4, 5]) expect(await engine.runtime.handle(`g-${n}`).result()).toBe(`${n}:ok`);
    } finally {
      await close();
    }
  });

  it('lets waiting runs in by priority, in start order within one', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [gated] });
    try {
      await engine.start(gated, { n: 0 }, { id: 'p-0' });
      const order = [
        ['p-low', -5],
        ['p-a', 10],
        ['p-mid', 0],
        ['p-b', 10],
      ] as const;
      for (const [id, priority] of order) await engine.start(gated, { n: 1 }, { id, priority });
      const ids = ['p-0', ...order.map(([id]) => id)];
      for (const _ of ids) {
        const [id] = await eventually(async () => {
          const now = await held(engine, 'gated-limit');
          return now.length > 0 && now;
        });
        await engine.signal(id!, 'go', 'ok');
        await engine.runtime.handle(id!).result();
      }
      expect(await admittedOrder(engine, ids)).toEqual(['p-a', 'p-b', 'p-mid', 'p-low']);
    } finally {
      await close();
    }
  });

  it('fairBy: groups take turns, so a group of 2 is not served after a group of 20', async () => {
    const fair = workflow(
      'fair',
      { concurrency: [{ limit: 1, fairBy: 'input.tenant' }] },
      async (ctx, input: { tenant: string }) => ctx.step('work', async () => input.tenant),
    );
    const { engine, close } = await testEngine(backend, { workflows: [fair, gated] });
    try {
      // the one slot held while the line forms: the blocker is of the same workflow key
      await engine.start(gated, { n: 0 }, { id: 'blocker', concurrency: [{ key: 'fair', limit: 1, scope: 'global' }] });
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push(`a-${i}`);
      ids.push('b-0', 'b-1');
      for (const id of ids) await engine.start(fair, { tenant: id[0]! }, { id });
      expect((await readSlots(engine.store, 'fair'))?.waiting).toHaveLength(22);
      await engine.signal('blocker', 'go', 'ok');
      for (const id of ids) await engine.runtime.handle(id).result();
      const order = await admittedOrder(engine, ids);
      expect(order.indexOf('b-0')).toBeLessThan(3);
      expect(order.indexOf('b-1')).toBeLessThan(5);
    } finally {
      await close();
    }
  });

  it('cancel_in_progress: the oldest run of the key is cancelled as the system, compensated; the new one runs next', async () => {
    const undone: string[] = [];
    const latest = workflow(
      'latest',
      { concurrency: [{ key: 'input.doc', limit: 1, onLimit: 'cancel_in_progress' }] },
      async (ctx, input: { doc: string; n: number }) => {
        await ctx.step('reserve', async () => input.n, { compensate: async () => void undone.push(`undo ${input.n}`) });
        return `${input.n}:${await ctx.waitForEvent<string>('go')}`;
      },
    );
    const { engine, close } = await testEngine(backend, { workflows: [latest] });
    try {
      const first = await engine.start(latest, { doc: 'd', n: 1 }, { id: 'l-1' });
      await eventually(async () => (await engine.run('l-1')).status === 'waiting');
      const second = await engine.start(latest, { doc: 'd', n: 2 }, { id: 'l-2' });
      await expect(first.result()).rejects.toThrow(/cancelled/);
      expect(undone).toEqual(['undo 1']);
      const [request] = (await engine.journal.readStream(runStream('l-1'))).filter(
        (e) => e.type === RUN_EVENT.runCancelRequested,
      );
      expect(request!.data).toEqual({
        by: 'system',
        reason: 'concurrency latest:d — 1 of 1 in use: cancelled for the newer run l-2',
      });
      await eventually(async () => (await engine.run('l-2')).status === 'waiting' && (await held(engine, 'latest:d')));
      expect(await held(engine, 'latest:d')).toEqual(['l-2']);
      await engine.signal('l-2', 'go', 'ok');
      expect(await second.result()).toBe('2:ok');
    } finally {
      await close();
    }
  });

  it('drop_newest: a start over the limit is refused (409), journaled on the key, and writes no run', async () => {
    const once = workflow(
      'once',
      { concurrency: [{ key: 'input.user', limit: 1, onLimit: 'drop_newest' }] },
      async (ctx) => ctx.waitForEvent<string>('go'),
    );
    const { engine, close } = await testEngine(backend, { workflows: [once] });
    try {
      const first = await engine.start(once, { user: '42' }, { id: 'o-1' });
      const refused = engine.start(once, { user: '42' }, { id: 'o-2' });
      await expect(refused).rejects.toThrow(LimitReachedError);
      await expect(refused).rejects.toThrow(ConflictError);
      await expect(refused).rejects.toThrow('concurrency once:42 — 1 of 1 in use');
      await expect(engine.run('o-2')).rejects.toThrow(NotFoundError);
      expect(await engine.journal.readStream(runStream('o-2'))).toEqual([]);
      const key = await engine.journal.readStream(slotStream('once:42'));
      expect(key.map((e) => e.type)).toEqual([RUN_EVENT.runDropped]);
      expect(key[0]!.data).toEqual({ runId: 'o-2', reason: 'concurrency once:42 — 1 of 1 in use' });
      // another key is free; the first one's end frees its own
      expect(await (await engine.start(once, { user: '7' }, { id: 'o-3' })).id).toBe('o-3');
      await engine.signal('o-1', 'go', 'ok');
      expect(await first.result()).toBe('ok');
      await engine.start(once, { user: '42' }, { id: 'o-4' });
      expect(await held(engine, 'once:42')).toEqual(['o-4']);
    } finally {
      await close();
    }
  });

  it('refuses a run whose input lacks its key, naming the limit', async () => {
    const keyed = workflow('keyed-limit', { concurrency: [{ key: 'input.user.id', limit: 1 }] }, async () => 1);
    const { engine, close } = await testEngine(backend, { workflows: [keyed] });
    try {
      const refused = engine.start(keyed, { user: {} });
      await expect(refused).rejects.toThrow(ValidationError);
      await expect(refused).rejects.toThrow(/^concurrency\[0\]\.key: 'input\.user\.id' is not in the run's input/);
      expect(() => workflow('bad-limit', { concurrency: [{ limit: 0 }] }, async () => 1)).toThrow(
        /^concurrency\[0\]\.limit: must be a whole number from 1 to 1000000/,
      );
    } finally {
      await close();
    }
  });

  it('keeps ordering keys as they were, sharing the global limit of that key', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [gated] });
    try {
      await engine.start(gated, { n: 1 }, { id: 'ok-1', orderingKey: 'shared', concurrency: [{ limit: 5 }] });
      await engine.start(gated, { n: 2 }, { id: 'ok-2', orderingKey: 'shared', concurrency: [{ limit: 5 }] });
      // a global limit of the same key counts the same slots
      await engine.start(gated, { n: 3 }, { id: 'ok-3', concurrency: [{ key: 'shared', limit: 1, scope: 'global' }] });
      expect(await held(engine, 'shared')).toEqual(['ok-1']);
      // an ordering key's wait reads as before limits: pending, no reason
      expect((await engine.run('ok-2')).status).toBe('pending');
      expect((await engine.run('ok-2')).waitingFor ?? null).toBeNull();
      expect((await engine.run('ok-3')).status).toBe('waiting');
      for (const id of ['ok-1', 'ok-2', 'ok-3']) {
        await eventually(async () => (await held(engine, 'shared')).includes(id));
        await engine.signal(id, 'go', 'x');
        await engine.runtime.handle(id).result();
      }
    } finally {
      await close();
    }
  });
});
