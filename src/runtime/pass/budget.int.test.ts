import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { CancelledError } from '../../errors.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { RUN_EVENT } from '../events.js';
import { workflow } from '../workflow.js';
import { decideBudget } from './budget-decision.js';
import { runStream } from './history.js';

let failures = 0;
const metered = workflow('budget-metered', async (ctx) => {
  await ctx.usage({ tokens: 100 });
  await ctx.sleep('pause', 20);
  await ctx.usage({ tokens: 50, cost: 0.01 });
  await ctx.step('flaky', async () => {
    if (failures++ === 0) throw new Error('once');
    return 'ok';
  });
  await ctx.usage({ toolCalls: 2 });
  return 'done';
});

const undone: string[] = [];
const capped = workflow('budget-steps', { budget: { steps: 2 } }, async (ctx) => {
  await ctx.step('one', async () => 1, { compensate: async () => void undone.push('one') });
  await ctx.step('two', async () => 2);
  await ctx.step('three', async () => {
    undone.push('three ran');
    return 3;
  });
});

const approval = workflow('budget-approve', { budget: { tokens: 100, onExceed: 'approve' } }, async (ctx) => {
  await ctx.step('ask', async () => 'answer');
  await ctx.usage({ tokens: 150 });
  return ctx.step('after', async () => 'went on');
});

/** A ledger agent's tool calls are its steps named `tool:<name>`: counted without a report. */
const tools = workflow('budget-tools', { budget: { toolCalls: 3 } }, async (ctx) => {
  for (const n of [1, 2]) await ctx.step(`tool:search-${n}`, async () => n);
  await ctx.usage({ toolCalls: 1 });
  await ctx.step('think', async () => 'no tool');
  await ctx.step('tool:search-3', async () => 3);
});

const slow = workflow('budget-wall-time', { budget: { wallTime: '1s' } }, async (ctx) => {
  await ctx.step('first', async () => 1);
  await ctx.sleep('nap', '1100ms');
  await ctx.step('second', async () => 2);
});

let parallelRan = 0;
/** Parallel branches are checked one after another: of two steps started at once, only one fits a budget of one. */
const parallel = workflow('budget-parallel', { budget: { steps: 1 } }, async (ctx) =>
  Promise.all(
    ['left', 'right'].map((name) =>
      ctx.step(name, async () => {
        parallelRan += 1;
        await new Promise((resolve) => setTimeout(resolve, 50));
        return name;
      }),
    ),
  ),
);

const badUsage = workflow('budget-bad-usage', async (ctx) => {
  await ctx.usage({ tokens: -1 });
});

describe.each(backends)('budgets on $name', (backend) => {
  let engine: Engine;
  let close = async () => {};
  beforeAll(async () => {
    ({ engine, close } = await testEngine(backend, {
      workflows: [metered, capped, approval, tools, slow, badUsage, parallel],
    }));
  });
  afterAll(() => close());

  it('keeps usage totals across passes and replays, counting each report once', async () => {
    failures = 0;
    const run = await engine.start(metered, null);
    expect(await run.result()).toBe('done');
    const view = await engine.run(run.id);
    expect(view.usage).toEqual({ tokens: 150, cost: 0.01, toolCalls: 2 });
    expect(view.budget).toBeUndefined();
    const events = await engine.journal.readStream(runStream(run.id));
    const usage = events.filter((e) => e.type === RUN_EVENT.usageRecorded).map((e) => e.data);
    // three reports, though the code ran from the top four times (the sleep, the retry)
    expect(usage).toHaveLength(3);
    expect(usage.at(-1)).toMatchObject({ totals: { tokens: 150, cost: 0.01, toolCalls: 2 } });
    expect(failures).toBe(2);
  });

  it('fails a run over its steps cap, naming the figures, and runs its compensations', async () => {
    undone.length = 0;
    const run = await engine.start(capped, null);
    await expect(run.result()).rejects.toThrow('budget: 3 of 2 steps');
    const view = await engine.run(run.id);
    expect(view.status).toBe('failed');
    expect(view.error).toBe('BudgetExceededError: budget: 3 of 2 steps');
    expect(view.compensations).toEqual({ ran: 1, failed: 0 });
    expect(undone).toEqual(['one']);
    expect(view.steps.map((s) => s.name)).toEqual(['one', 'two']);
  });

  it('waits for approval over its tokens cap: approved, it goes on with the budget extended', async () => {
    const run = await engine.start(approval, null);
    const waiting = await eventually(async () => {
      const view = await engine.run(run.id);
      return view.status === 'waiting' ? view : undefined;
    });
    expect(waiting.waitingFor).toBe('budget: 150 of 100 tokens — approve to continue');
    expect(waiting.budgetWait).toEqual({ round: 1, reason: waiting.waitingFor });
    expect(waiting.steps.map((s) => s.name)).toEqual(['ask']);
    await decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'ana' });
    expect(await run.result()).toBe('went on');
    const view = await engine.run(run.id);
    expect(view.budget).toEqual({ tokens: 200, onExceed: 'approve' });
    expect(view.usage).toEqual({ tokens: 150, cost: 0, toolCalls: 0 });
    expect(view.waitingFor ?? null).toBeNull();
    const decided = (await engine.journal.readStream(runStream(run.id))).filter(
      (e) => e.type === RUN_EVENT.budgetDecided,
    );
    expect(decided.map((e) => e.data)).toMatchObject([{ round: 1, decision: 'approve', by: 'ana' }]);
    // nothing waits for a decision now
    await expect(decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'ana' })).rejects.toThrow(
      'is not waiting for a budget decision',
    );
  });

  it('fails a run waiting for approval when a person rejects it', async () => {
    const run = await engine.start(approval, null);
    await eventually(async () => (await engine.run(run.id)).status === 'waiting');
    await expect(
      decideBudget(engine.runtime, run.id, { decision: 'reject', by: 'bob', extend: { tokens: 5 } }),
    ).rejects.toThrow('extend: is for an approval');
    await decideBudget(engine.runtime, run.id, { decision: 'reject', by: 'bob' });
    await expect(run.result()).rejects.toThrow('budget: 150 of 100 tokens — rejected by bob');
    const view = await engine.run(run.id);
    expect(view.status).toBe('failed');
    expect(view.steps.map((s) => s.name)).toEqual(['ask']);
  });

  it('cancels a run waiting for approval: it needs no decision, and takes none after', async () => {
    const run = await engine.start(approval, null);
    await eventually(async () => (await engine.run(run.id)).status === 'waiting');
    await engine.cancel(run.id, { reason: 'too expensive' });
    await expect(run.result()).rejects.toThrow(CancelledError);
    expect((await engine.run(run.id)).status).toBe('cancelled');
    await expect(decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'ana' })).rejects.toThrow(
      'is not waiting for a budget decision (it is cancelled)',
    );
  });

  it('approves with an extension that is too small: the run waits again, in a new round', async () => {
    const run = await engine.start(approval, null);
    await eventually(async () => (await engine.run(run.id)).status === 'waiting');
    await expect(
      decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'ana', extend: { tokens: -5 } }),
    ).rejects.toThrow('extend.tokens');
    await decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'ana', extend: { tokens: 10 } });
    const again = await eventually(async () => {
      const view = await engine.run(run.id);
      return view.budgetWait?.round === 2 ? view : undefined;
    });
    expect(again.waitingFor).toBe('budget: 150 of 110 tokens — approve to continue');
    await decideBudget(engine.runtime, run.id, { decision: 'approve', by: 'cy', extend: { tokens: 1000 } });
    expect(await run.result()).toBe('went on');
    expect((await engine.run(run.id)).budget?.tokens).toBe(1110);
  });

  it("counts a ledger agent's tool steps as tool calls, with the reported ones", async () => {
    const run = await engine.start(tools, null);
    await expect(run.result()).rejects.toThrow('budget: 4 of 3 tool calls');
    const view = await engine.run(run.id);
    expect(view.steps.map((s) => s.name)).toEqual(['tool:search-1', 'tool:search-2', 'think']);
    expect(view.usage).toEqual({ tokens: 0, cost: 0, toolCalls: 3 });
  });

  it('fails a run past its wall time at its next step', async () => {
    const run = await engine.start(slow, null);
    await expect(run.result()).rejects.toThrow(/^BudgetExceededError: budget: [\d,]+ of 1,000 ms wall time$/);
    expect((await engine.run(run.id)).steps.map((s) => s.name)).toEqual(['first']);
  });

  it('refuses a bad usage report, naming the field', async () => {
    const run = await engine.start(badUsage, null);
    await expect(run.result()).rejects.toThrow('usage.tokens: must be a number from 0 to 1e15 (got -1)');
  });

  it('lets one of two parallel steps pass a budget of one step, never both', async () => {
    parallelRan = 0;
    const run = await engine.start(parallel, null);
    await expect(run.result()).rejects.toThrow('budget: 2 of 1 steps');
    const events = await engine.journal.readStream(runStream(run.id));
    expect(events.filter((e) => e.type === RUN_EVENT.stepStarted)).toHaveLength(1);
    expect(parallelRan).toBe(1);
  });
});
