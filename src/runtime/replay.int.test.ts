import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { runStream } from './pass/history.js';
import { workflow, type Workflow, type WorkflowContext } from './workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { recordedHistory, replayHistories, type RecordedHistory } from './replay.js';

/* Histories recorded by real runs, replayed through changed code: what replays, what diverges and how it is told. */

let charged = 0;
const square = workflow('square', async (ctx, n: number) => ctx.step('square', async () => n * n));

/** The order workflow as deployed; `body` is the code after its first step, so each change below swaps only it. */
function order(version: string, body: (ctx: WorkflowContext, id: string) => Promise<unknown>): Workflow {
  return workflow('order', { version }, async (ctx, input: { hold: boolean }) => {
    const id = await ctx.step('reserve', async () => `r-${++charged}`);
    const rest = await body(ctx, id);
    if (input.hold) await ctx.sleep('hold', '1h');
    return rest;
  });
}

const deployed = order('1', async (ctx, id) => {
  const receipt = await ctx.step('charge', async () => ({ id, at: ++charged }));
  const [a, b] = await Promise.all([ctx.now(), ctx.child(square, 3)]);
  return { receipt, later: a > 0, b };
});

describe.each(backends)('replayHistories on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  let completed: RecordedHistory;
  let inFlight: RecordedHistory;

  beforeAll(async () => {
    ({ engine, close } = await testEngine(backend, { workflows: [deployed, square] }));
    await (await engine.start(deployed, { hold: false }, { id: 'done' })).result({ pollMs: 20 });
    await engine.start(deployed, { hold: true }, { id: 'held' });
    await eventually(async () => (await engine.runs.view('held')).status === 'sleeping');
    completed = await recordedHistory(engine, 'done');
    inFlight = await recordedHistory(engine, 'held');
  }, 30_000);
  afterAll(() => close());

  it('the same code replays both runs, runs no step and writes nothing', async () => {
    const before = charged;
    const versions = (await engine.journal.readStream(runStream('held'))).length;
    const results = await replayHistories([completed, inFlight], [deployed, square]);
    expect(results).toEqual([
      { runId: 'done', workflow: 'order', replays: true },
      { runId: 'held', workflow: 'order', replays: true },
    ]);
    expect(charged).toBe(before);
    expect(await engine.journal.readStream(runStream('held'))).toHaveLength(versions);
  });

  it('catches a renamed step and a sleep put before a recorded step, in plain words', async () => {
    const renamed = order('2', async (ctx, id) => ctx.step('charge-card', async () => id));
    const slept = order('3', async (ctx, id) => {
      await ctx.sleep('cool-down', '1m');
      return ctx.step('charge', async () => id);
    });
    const [a, b] = await replayHistories([completed, inFlight], [renamed, square]);
    expect(a).toEqual({
      runId: 'done',
      workflow: 'order',
      replays: false,
      divergence:
        "call 2: the history has `ctx.step('charge')`, the code now calls `ctx.step('charge-card')` — guard the change with `ctx.patched('…')`",
    });
    expect(b!.replays).toBe(false);
    const [c] = await replayHistories([completed], [slept, square]);
    expect(c!.divergence).toBe(
      "call 2: the history has `ctx.step('charge')`, the code now calls `ctx.sleep('cool-down')` — guard the change with `ctx.patched('…')`",
    );
  });

  it('passes the same change guarded by ctx.patched, and a step added after the end of the history', async () => {
    const guarded = order('4', async (ctx, id) => {
      if (ctx.patched('cool-down')) await ctx.sleep('cool-down', '1m');
      const receipt = await ctx.step('charge', async () => ({ id, at: 0 }));
      const [a, b] = await Promise.all([ctx.now(), ctx.child(square, 3)]);
      if (ctx.patched('audit')) await ctx.step('audit', async () => 'audited');
      return { receipt, later: a > 0, b };
    });
    const results = await replayHistories([completed, inFlight], [guarded, square]);
    expect(results.map((r) => r.divergence ?? 'replays')).toEqual(['replays', 'replays']);
  });

  it('catches code that ends before calls its history holds, and a workflow the code lacks', async () => {
    const shorter = order('5', async (ctx, id) => ctx.step('charge', async () => id));
    const [a] = await replayHistories([completed], [shorter, square]);
    expect(a!.divergence).toBe(
      "call 3: the history has `ctx.now()`, the code now returns before it — guard the change with `ctx.patched('…')`",
    );
    const [b] = await replayHistories([completed], [square]);
    expect(b).toEqual({
      runId: 'done',
      workflow: 'order',
      replays: false,
      divergence: "the code has no workflow 'order'",
    });
  });

  it('catches code that now fails where the recorded run completed', async () => {
    const broken = order('6', async (ctx, id) => {
      const receipt = await ctx.step('charge', async () => ({ id, at: 0 }));
      await Promise.all([ctx.now(), ctx.child(square, 3)]);
      return (receipt as unknown as { card: { last4: string } }).card.last4;
    });
    const [a] = await replayHistories([completed], [broken, square]);
    expect(a!.divergence).toMatch(/^the run completed in the history, the code now fails \(TypeError: .*last4/);
  });
});

describe.each(backends)('replayHistories of branches and generations on $name', (backend) => {
  const batches = (rename: boolean) =>
    workflow('batches', { version: rename ? '2' : '1' }, async (ctx, input: { round: number }) => {
      const branches = await ctx.parallel('fan', {
        a: async (c) => c.step(rename && input.round === 1 ? 'a-renamed' : 'a', async () => input.round),
        b: async (c) => c.step('b', async () => 2),
      });
      if (input.round === 0) return ctx.continueAsNew({ round: 1 });
      return Object.keys(branches);
    });

  it('numbers a branch call by its branch, and a later generation by its number', async () => {
    const { engine, close } = await testEngine(backend, { workflows: [batches(false)] });
    try {
      await (await engine.start(batches(false), { round: 0 }, { id: 'looped' })).result({ pollMs: 20 });
      const history = await recordedHistory(engine, 'looped');
      expect(history.events.filter((e) => e.type === 'run.continued')).toHaveLength(1);
      const [same] = await replayHistories([history], [batches(false)]);
      expect(same).toEqual({ runId: 'looped', workflow: 'batches', replays: true });
      const [renamed] = await replayHistories([history], [batches(true)]);
      expect(renamed!.divergence).toBe(
        "generation 1, call 1.a.1: the history has `ctx.step('a')`, the code now calls `ctx.step('a-renamed')` — guard the change with `ctx.patched('…')`",
      );
    } finally {
      await close();
    }
  }, 30_000);
});
