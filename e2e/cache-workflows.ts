import { workflow } from '../src/runtime/workflow.js';

/** Rounds of a signal then a step whose output builds on the last: a stale history gives a wrong sum or a NonDeterminismError. */
export const relay = workflow('relay', { version: '1' }, async (ctx, input: { rounds: number }) => {
  let acc = { sum: 0, pids: [] as number[] };
  for (let i = 0; i < input.rounds; i++) {
    const add = await ctx.waitForEvent<number>('next');
    const prev = acc;
    acc = await ctx.step(`round-${i}`, async () => ({ sum: prev.sum + add!, pids: [...prev.pids, process.pid] }));
  }
  return acc;
});
