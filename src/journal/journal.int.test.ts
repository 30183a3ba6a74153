import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, ValidationError } from '../errors.js';
import type { Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';

describe.each(backends)('journal on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, close } = await testEngine(backend)));
  afterEach(() => close());

  it('updates projections in the same transaction as the append', async () => {
    engine.journal.project('deposited', async (event, tx) => {
      const current = ((await tx.projectionGet({ name: 'balance', key: event.streamId })) as number | undefined) ?? 0;
      await tx.projectionPut({
        name: 'balance',
        key: event.streamId,
        value: current + (event.data as { amount: number }).amount,
      });
    });
    await engine.journal.append('acct-1', [
      { type: 'deposited', data: { amount: 5 } },
      { type: 'deposited', data: { amount: 7 } },
    ]);
    expect(await engine.store.projectionGet({ name: 'balance', key: 'acct-1' })).toBe(12);
    await engine.journal.append('acct-1', [{ type: 'deposited', data: { amount: 1 } }], { idempotencyKey: 'once' });
    await engine.journal.append('acct-1', [{ type: 'deposited', data: { amount: 1 } }], { idempotencyKey: 'once' });
    expect(await engine.store.projectionGet({ name: 'balance', key: 'acct-1' })).toBe(13);
  });

  it('rolls the whole append back when a projection fails', async () => {
    engine.journal.project('withdrawn', async (event, tx) => {
      await tx.projectionPut({ name: 'seen', key: event.streamId, value: true });
      throw new Error('insufficient funds');
    });
    await expect(
      engine.journal.append('acct-2', [
        { type: 'opened', data: {} },
        { type: 'withdrawn', data: { amount: 1 } },
      ]),
    ).rejects.toThrow('insufficient funds');
    expect(await engine.journal.readStream('acct-2')).toEqual([]);
    expect(await engine.store.projectionGet({ name: 'seen', key: 'acct-2' })).toBeUndefined();
  });

  it('answers bad input with a ValidationError naming the field, and writes nothing', async () => {
    await expect(engine.journal.append('', [{ type: 'x', data: {} }])).rejects.toThrow(
      new ValidationError('streamId', 'must be a non-empty string'),
    );
    await expect(engine.journal.append('s', [])).rejects.toThrow(/^events: must be a non-empty array/);
    await expect(engine.journal.append('a\u001eb', [{ type: 'x', data: {} }])).rejects.toThrow(
      'streamId: must not contain control characters',
    );
    await expect(engine.journal.append('s', [{ type: '', data: {} }])).rejects.toThrow(/^events\[0\]\.type/);
    await expect(
      engine.journal.append('s', [
        { type: 'ok', data: {} },
        { type: 'x', data: { n: 1n } },
      ]),
    ).rejects.toThrow(/^events\[1\]\.data: is not JSON-serializable/);
    const big = 'x'.repeat(1024 * 1024 + 1);
    await expect(engine.journal.append('s', [{ type: 'x', data: big }])).rejects.toThrow(
      'events[0].data: is 1 MiB (1048579 bytes), over the limit of 1 MiB (1048576 bytes)',
    );
    await expect(engine.journal.append('s', [{ type: 'x', data: {} }], { expectedVersion: -1 })).rejects.toThrow(
      /^expectedVersion/,
    );
    expect(await engine.journal.readAll()).toEqual([]);
  });

  it('appends inside a caller transaction together with a task, or neither', async () => {
    await expect(
      engine.store.transaction(async (tx) => {
        await engine.journal.append('order-1', [{ type: 'order.placed', data: {} }], { tx });
        await engine.queue.enqueue('ship', { order: 'order-1' }, { tx });
        await engine.journal.append('order-1', [{ type: 'order.placed', data: {} }], { tx, expectedVersion: 0 });
      }),
    ).rejects.toThrow(ConflictError);
    expect(await engine.journal.readAll()).toEqual([]);
    expect(await engine.queue.list()).toEqual([]);

    await engine.store.transaction(async (tx) => {
      await engine.journal.append('order-1', [{ type: 'order.placed', data: {} }], { tx });
      await engine.queue.enqueue('ship', { order: 'order-1' }, { tx });
    });
    expect(await engine.journal.readStream('order-1')).toHaveLength(1);
    expect(await engine.queue.list({ queue: 'ship' })).toHaveLength(1);
  });
});
