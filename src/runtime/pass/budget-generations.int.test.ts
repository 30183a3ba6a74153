import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { workflow } from '../workflow.js';
import { decideBudget } from './budget-decision.js';
import { runStream } from './history.js';

/** A budget is the run's, not a generation's: `continueAsNew` must not give a run a fresh one. */
const stepping = workflow('budget-gen-steps', { budget: { steps: 3 } }, async (ctx, n: number) => {
  await ctx.step('a', async () => n);
  await ctx.step('b', async () => n);
  return n < 5 ? ctx.continueAsNew(n + 1) : n;
});

const spending = workflow('budget-gen-tokens', { budget: { tokens: 100 } }, async (ctx, n: number) => {
  await ctx.usage({ tokens: 60 });
  await ctx.step('call', async () => n);
  return n < 5 ? ctx.continueAsNew(n + 1) : n;
});

const lasting = workflow('budget-gen-wall-time', { budget: { wallTime: '1s' } }, async (ctx, n: number) => {
  await ctx.step('work', async () => n);
  await ctx.sleep('nap', '600ms');
  return n < 3 ? ctx.continueAsNew(n + 1) : n;
});

const approved = workflow(
  'budget-gen-approve',
  { budget: { tokens: 100, onExceed: 'approve' } },
  async (ctx, n: number) => {
    await ctx.usage({ tokens: n === 0 ? 150 : 100 });
    await ctx.step(`after-${n}`, async () => n);
    return n < 1 ? ctx.continueAsNew(n + 1) : n;
  },
);

describe.each(backends)('budgets across continueAsNew on $name', (backend) => {
  let engine: Engine;
  let close = async () => {};
  beforeAll(async () => {
    ({ engine, close } = await testEngine(backend, { workflows: [stepping, spending, lasting, approved] }));
  });
  afterAll(() => close());

  const started = async (id: string) =>
    (await engine.journal.readStream(runStream(id))).filter((e) => e.type === RUN_EVENT.stepStarted).length;

  it('carries the steps counted into the next generation', async () => {
    const run = await engine.start(stepping, 0);
    await expect(run.result()).rejects.toThrow('budget: 4 of 3 steps');
    expect(await started(run.id)).toBe(3);
    expect((await engine.run(run.id)).generation).toBe(1);
  });

  it('carries the usage reported into the next generation', async () => {
    const run = await engine.start(spending, 0);
    await expect(run.result()).rejects.toThrow('budget: 120 of 100 tokens');
    expect(await started(run.id)).toBe(1);
    expect((await engine.run(run.id)).usage).toEqual({ tokens: 120, cost: 0, toolCalls: 0 });
  });

  it("counts wall time from the first generation's start", async () => {
    const run = await engine.start(lasting, 0);
    await expect(run.result()).rejects.toThrow(/^BudgetExceededError: budget: [\d,]+ of 1,000 ms wall time$/);
    // 600 ms a generation: the second's step is within 1 s of the run's start, the third's is not
    expect(await started(run.id)).toBe(2);
  });

  it('keeps what people approved, and numbers the next wait after the ones before', async () => {
    const run = await engine.start(approved, 0);
    const first = await eventually(async () => {
      const view = await engine.run(run.id);
      return view.budgetWait?.round === 1 && view.status === 'waiting' ? view : undefined;
    });
    expect(first.waitingFor).toBe('budget: 150 of 100 tokens — approve to continue');
    await decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'ana', extend: { tokens: 100 } });
    // the next generation used 100 more: 250 of the 200 approved, a second wait (not the first's approval again)
    const second = await eventually(async () => {
      const view = await engine.run(run.id);
      return view.budgetWait?.round === 2 && view.status === 'waiting' ? view : undefined;
    });
    expect(second.generation).toBe(1);
    expect(second.waitingFor).toBe('budget: 250 of 200 tokens — approve to continue');
    await decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'bo', extend: { tokens: 100 } });
    expect(await run.result()).toBe(1);
  });
});
