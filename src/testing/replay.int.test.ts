import { describe, expect, it } from 'vitest';
import { TerminalError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { checkCrashRecovery } from './replay.js';

describe('checkCrashRecovery', () => {
  it('finishes with the same output after a crash at every write', async () => {
    const square = workflow('square', async (ctx, n: number) => ctx.step('square', async () => n * n));
    const order = workflow('order', async (ctx, input: { items: number[] }) => {
      const reserved = await ctx.step(
        'reserve',
        async ({ idempotencyKey }) => ({ key: idempotencyKey, count: input.items.length }),
        {
          compensate: async () => undefined,
        },
      );
      const at = await ctx.now();
      await ctx.sleep('settle', '20ms');
      const [a, b] = await Promise.all([ctx.step('a', async () => 1), ctx.child(square, 4)]);
      return { reserved, later: (await ctx.now()) >= at, sum: a + b };
    });
    const report = await checkCrashRecovery(order, { items: [1, 2, 3] }, { workflows: [square] });
    expect(report.output).toEqual({ reserved: { key: 'checked:reserve#1', count: 3 }, later: true, sum: 17 });
    expect(report.boundaries).toBeGreaterThan(8);
  });

  it('catches a workflow whose output depends on something other than ctx', async () => {
    let calls = 0;
    const leaky = workflow('leaky', async (ctx) => {
      const outside = ++calls; // not journaled: a replay sees another value
      await ctx.step('work', async () => 'done');
      return outside;
    });
    await expect(checkCrashRecovery(leaky, {})).rejects.toThrow(
      /after a crash before write \d+ of \d+, the run returned/,
    );
  });

  it('reports a run that fails after a crash as a failure', async () => {
    let attempts = 0;
    const once = workflow('once', async (ctx) =>
      ctx.step('charge', async () => {
        if (++attempts > 1) throw new TerminalError('charged twice');
        return 'charged';
      }),
    );
    await expect(checkCrashRecovery(once, {})).rejects.toThrow('charged twice');
  });
});
