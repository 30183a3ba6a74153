import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ConflictError, ValidationError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

describe.each(backends)('task concurrency on $name', (backend) => {
  let engine: Engine;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, second, close } = await testEngine(backend)));
  afterEach(() => close());

  /** A handler that counts the tasks it runs at once, by `group` of the payload. */
  const counting = () => {
    const now = new Map<string, number>();
    const most = new Map<string, number>();
    const handler = async (payload: { group: string }) => {
      const n = (now.get(payload.group) ?? 0) + 1;
      now.set(payload.group, n);
      most.set(payload.group, Math.max(most.get(payload.group) ?? 0, n));
      await sleep(20);
      now.set(payload.group, now.get(payload.group)! - 1);
      return null;
    };
    return { handler, most };
  };
  const allDone = (queue: string, count: number) =>
    eventually(async () => {
      const done = await engine.queue.list({ queue, state: 'completed', limit: 1000 });
      return done.length === count ? done : undefined;
    });

  it("runs at most a key's limit at once across two engines' workers, each key apart", async () => {
    const other = await second();
    const { handler, most } = counting();
    await engine.queue.enqueueMany('ck', [
      ...Array.from({ length: 8 }, () => ({ payload: { group: 'a' }, concurrency: { key: 'a', limit: 2 } })),
      ...Array.from({ length: 4 }, () => ({ payload: { group: 'b' }, concurrency: { key: 'b', limit: 1 } })),
      ...Array.from({ length: 4 }, () => ({ payload: { group: 'free' } })),
    ]);
    engine.work('ck', handler, { concurrency: 6 });
    other.work('ck', handler, { concurrency: 6 });
    await allDone('ck', 16);
    expect(most.get('a')).toBe(2);
    expect(most.get('b')).toBe(1);
  });

  it("runs at most a queue's limit at once, set without a restart", async () => {
    const { handler, most } = counting();
    await engine.queue.setLimit('lq', 3);
    expect(await engine.queue.limit('lq')).toBe(3);
    expect(await engine.queue.listLimits()).toEqual([{ queue: 'lq', concurrency: 3 }]);
    await engine.queue.enqueueMany(
      'lq',
      Array.from({ length: 12 }, () => ({ payload: { group: 'q' } })),
    );
    engine.work('lq', handler, { concurrency: 10 });
    await allDone('lq', 12);
    expect(most.get('q')).toBe(3);
    await engine.queue.setLimit('lq', null);
    expect(await engine.queue.limit('lq')).toBeNull();
  });

  it('refuses a bad limit or key naming the field, and writes nothing', async () => {
    const refused = async (fn: () => Promise<unknown>) => {
      const error = await fn().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      return (error as ValidationError).problems[0]!.path;
    };
    expect(await refused(() => engine.queue.setLimit('lq', 0))).toBe('concurrency');
    expect(await refused(() => engine.queue.setLimit('lq', 1.5))).toBe('concurrency');
    expect(await refused(() => engine.queue.setLimit('bad queue', 2))).toBe('queue');
    expect(await refused(() => engine.queue.enqueue('v', 1, { concurrency: { key: 'k', limit: 0 } }))).toBe(
      'concurrency.limit',
    );
    expect(await refused(() => engine.queue.enqueue('v', 1, { concurrency: { key: '', limit: 2 } }))).toBe(
      'concurrency.key',
    );
    expect(
      await refused(() =>
        engine.queue.enqueueMany('v', [{ payload: 1 }, { payload: 2, concurrency: { key: 'k', limit: -1 } }]),
      ),
    ).toBe('items[1].concurrency.limit');
    expect(await engine.queue.list({ queue: 'v' })).toEqual([]);
    expect(await engine.queue.listLimits()).toEqual([]);
  });

  it("gives each fairness group its turn under a queue's limit, with the engine's workers", async () => {
    const order: string[] = [];
    await engine.queue.setLimit('fair', 1);
    await engine.queue.enqueueMany(
      'fair',
      Array.from({ length: 200 }, (_, i) => ({ payload: { group: 'A', i }, fairBy: 'tenant-a' })),
    );
    await engine.queue.enqueueMany(
      'fair',
      Array.from({ length: 10 }, (_, i) => ({ payload: { group: 'B', i }, fairBy: 'tenant-b' })),
    );
    engine.work(
      'fair',
      async (payload: { group: string }) => {
        order.push(payload.group);
        return null;
      },
      { concurrency: 4 },
    );
    await eventually(() => order.filter((g) => g === 'B').length === 10);
    // B's ten went one each between A's: all of them within the first 21 (a worker may have taken A's first early)
    expect(order.lastIndexOf('B')).toBeLessThan(21);
  });

  it('refuses a task over a full key (drop_newest) with a ConflictError naming the limit, and bad values', async () => {
    const full = { concurrency: { key: 'user:9', limit: 1, onLimit: 'drop_newest' as const } };
    await engine.queue.enqueue('drop', 1, full);
    await expect(engine.queue.enqueue('drop', 2, full)).rejects.toThrow(ConflictError);
    await expect(engine.queue.enqueueMany('drop', [{ payload: 3, ...full }])).rejects.toThrow(
      'concurrency user:9 — 1 of 1 in use',
    );
    expect(await engine.queue.list({ queue: 'drop' })).toHaveLength(1);
    const bad = { concurrency: { key: 'k', limit: 1, onLimit: 'newest' as never } };
    await expect(engine.queue.enqueue('drop', 1, bad)).rejects.toThrow('concurrency.onLimit: must be one of');
    await expect(engine.queue.enqueue('drop', 1, { fairBy: '' })).rejects.toThrow(ValidationError);
  });
});
