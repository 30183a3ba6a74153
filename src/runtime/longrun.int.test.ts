import { afterEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createEngine, type Engine } from '../engine.js';
import { createApp } from '../server/app.js';
import { storedWorkflows } from '../app/workflows.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { generationOf } from './pass/generations.js';
import { runsNeedingPatch } from './pass/patches.js';
import { RUN_QUEUE } from './runtime.js';
import { workflow, type Workflow } from './workflow.js';

/** Takes signals `add` three per generation, continuing as new after each three, until it has seen ten. */
const counter = workflow('counter', async (ctx, input: { total: number; seen: number; gen: number }) => {
  let { total, seen } = input;
  for (let i = 0; i < 3; i++) {
    const add = await ctx.waitForEvent<number>('add');
    total += add!;
    seen += 1;
    await ctx.step(`note-${i}`, async () => total);
    if (seen === 10) return { total, gen: input.gen };
  }
  return ctx.continueAsNew({ total, seen, gen: input.gen + 1 });
});

let releaseSwitch: () => void = () => {};
/** Generation 0 blocks in a step (a signal arrives meanwhile), then continues; generation 1 waits for that signal. */
const switcher = workflow('switcher', async (ctx, input: { gen: number }) => {
  if (input.gen === 0) {
    await ctx.step('block', () => new Promise<void>((resolve) => (releaseSwitch = resolve)));
    return ctx.continueAsNew({ gen: 1 });
  }
  return ctx.waitForEvent<string>('late');
});

const finalV2 = workflow('mover', { version: '2' }, async (_ctx, input: { from: string }) => ({
  from: input.from,
  on: 'v2',
}));
const moverV1 = workflow('mover', { version: '1' }, async (ctx) => {
  await ctx.step('v1-work', async () => 1);
  return ctx.continueAsNew({ from: 'v1' }, { workflow: finalV2 });
});

const hasty = workflow('hasty', async (ctx) => {
  void ctx.step('slow', () => new Promise((resolve) => setTimeout(resolve, 200)));
  return ctx.continueAsNew({});
});

// one workflow, version '1' kept across a change guarded by ctx.patched
const before = workflow('order', { version: '1' }, async (ctx) => {
  await ctx.step('charge', async () => 'charged');
  await ctx.waitForEvent('go');
  return ctx.step('ship', async () => 'shipped');
});
const withPatch = workflow('order', { version: '1' }, async (ctx) => {
  await ctx.step('charge', async () => 'charged');
  const checked = ctx.patched('fraud-check') ? await ctx.step('fraud-check', async () => 'checked') : 'unchecked';
  await ctx.waitForEvent('go');
  return ctx.step('ship', async () => `shipped:${checked}`);
});
const deprecated = workflow('order', { version: '1' }, async (ctx) => {
  await ctx.step('charge', async () => 'charged');
  ctx.deprecatePatch('fraud-check');
  const checked = await ctx.step('fraud-check', async () => 'checked');
  await ctx.waitForEvent('go');
  return ctx.step('ship', async () => `shipped:${checked}`);
});

describe.each(backends)('runs that live for months on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Parameters<Engine['register']>) => {
    const made = await testEngine(backend, { workflows, pollMs: 50, leaseMs: 2000 });
    close = made.close;
    return made;
  };

  it('continues as new: one run id, a fresh generation each time, no signal lost across the switches', async () => {
    const { engine } = await engineWith(counter);
    const run = await engine.start(counter, { total: 0, seen: 0, gen: 0 }, { id: 'count-1' });
    // all ten at once: most arrive before or during a switch and are carried into the next generation
    for (let n = 1; n <= 10; n++) await engine.signal('count-1', 'add', n);
    expect(await run.result()).toEqual({ total: 55, gen: 3 });
    const view = await engine.run('count-1');
    expect(view).toMatchObject({ status: 'success', generation: 3 });
    // the view shows the last generation's steps only
    expect(view.steps.map((s) => s.name)).toEqual(['note-0']);
    const app = createApp({
      engine,
      workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }),
      uiDir: null,
    });
    expect(await (await app.fetch(new Request('http://local/runs/count-1'))).json()).toMatchObject({
      id: 'count-1',
      status: 'success',
      generation: 3,
      output: { total: 55, gen: 3 },
    });
    const { generation, from } = await generationOf(engine.store, 'count-1');
    expect(generation).toBe(3);
    const events = await engine.journal.readStream('run:count-1');
    expect(
      events.filter((e) => e.type === 'run.continued').map((e) => (e.data as { generation: number }).generation),
    ).toEqual([1, 2, 3]);
    expect(events[from - 1]!.type).toBe('run.continued');
    // every signal taken exactly once: 10 sent, carried ones counted in the generation that took them
    const taken = events.filter((e) => e.type === 'wait.completed');
    expect(taken).toHaveLength(10);
    expect(
      events.some((e) => e.type === 'signal.sent' && (e.data as { carriedFrom?: number }).carriedFrom !== undefined),
    ).toBe(true);
  });

  it('keeps a signal sent while the pass that continues as new was running', async () => {
    const { engine } = await engineWith(switcher);
    const run = await engine.start(switcher, { gen: 0 }, { id: 'switch-1' });
    await eventually(async () =>
      (await engine.run('switch-1')).steps.some((s) => s.name === 'block' && s.status === 'running'),
    );
    // sent after the pass read its history, before it writes the switch
    await engine.signal('switch-1', 'late', 'kept');
    releaseSwitch();
    expect(await run.result()).toBe('kept');
    const carried = (await engine.journal.readStream('run:switch-1'))
      .filter((e) => e.type === 'signal.sent')
      .map((e) => e.data);
    expect(carried).toEqual([
      { name: 'late', payload: 'kept' },
      { name: 'late', payload: 'kept', carriedFrom: expect.any(Number) },
    ]);
  });

  it('continues as new onto another version of its workflow', async () => {
    const { engine } = await engineWith(moverV1, finalV2);
    const run = await engine.start(moverV1, {}, { id: 'move-1' });
    expect(await run.result()).toEqual({ from: 'v1', on: 'v2' });
    expect(await engine.run('move-1')).toMatchObject({ version: '2', generation: 1, steps: [] });
  });

  it("tags a woken run's pass with its version, the new one once it continued onto another", async () => {
    const waiter = workflow('tagged', { version: '1' }, async (ctx) => {
      await ctx.waitForEvent('go');
      return ctx.continueAsNew({}, { workflow: tagged2 });
    });
    const tagged2 = workflow('tagged', { version: '2' }, async (ctx) => ctx.waitForEvent<string>('again'));
    const { engine } = await engineWith(waiter, tagged2);
    const run = await engine.start(waiter, {}, { id: 'tag-1' });
    const passTags = async () =>
      (await engine.queue.list({ queue: RUN_QUEUE }))
        .filter((t) => (t.payload as { runId: string }).runId === 'tag-1')
        .map((t) => t.tag);
    await eventually(async () => (await engine.run('tag-1')).status === 'waiting');
    await engine.signal('tag-1', 'go', null);
    await eventually(
      async () => (await engine.run('tag-1')).version === '2' && (await engine.run('tag-1')).status === 'waiting',
    );
    await engine.signal('tag-1', 'again', 'done');
    expect(await run.result()).toBe('done');
    expect(await passTags()).toEqual(['tagged@1', 'tagged@1', 'tagged@2', 'tagged@2']);
  });

  it('starts a pass from the generation begun since the history it kept (continued elsewhere)', async () => {
    const stages = workflow('stages', async (ctx, input: { gen: number }) => {
      const got = await ctx.waitForEvent<string>('go');
      if (input.gen === 0) return ctx.continueAsNew({ gen: 1 });
      return `${got}, then ${await ctx.waitForEvent<string>('end')}, in generation ${input.gen}`;
    });
    const { engine } = await engineWith(stages);
    const cache = engine.runtime.cache;
    const waiting = async (generation: number) => {
      const view = await engine.run('stale-1');
      return (view.generation ?? 0) === generation && view.status === 'waiting' && cache.size > 0;
    };
    const run = await engine.start(stages, { gen: 0 }, { id: 'stale-1' });
    await eventually(() => waiting(0));
    // the history of generation 0, kept as a worker that ran no pass since would hold it
    const stale = cache.take('stale-1')!;
    expect(stale.from).toBe(1);
    await engine.signal('stale-1', 'go', 'first');
    await eventually(() => waiting(1));
    cache.put('stale-1', stale.from, stale.history, 1);
    await engine.signal('stale-1', 'go', 'second');
    await eventually(
      async () =>
        (await engine.journal.readStream('run:stale-1')).some(
          (e) => e.type === 'wait.completed' && (e.data as { name?: string }).name === 'go' && e.version > 5,
        ) && cache.size > 0,
    );
    // the pass kept what it read as generation 1's history, from its start
    const kept = cache.take('stale-1')!;
    expect(kept.from).toBe((await generationOf(engine.store, 'stale-1')).from);
    expect(kept.from).toBeGreaterThan(1);
    cache.put('stale-1', kept.from, kept.history, 1);
    await engine.signal('stale-1', 'end', 'third');
    expect(await run.result()).toBe('second, then third, in generation 1');
  });

  it('refuses continueAsNew while other calls are in flight', async () => {
    const { engine } = await engineWith(hasty);
    const run = await engine.start(hasty, {}, { id: 'hasty-1' });
    await expect(run.result()).rejects.toThrow(/continueAsNew.*in flight/);
  });

  it('patched: runs past the change keep the old branch, new ones take the new; --needs-patch says which need it; deprecatePatch stops, never fails, a run that needs it', async () => {
    const database = await backend.create();
    const deploy = (code: Workflow) => createEngine({ database, workflows: [code], pollMs: 50, leaseMs: 2000 });
    const waiting = async (engine: Engine, ...ids: string[]) =>
      eventually(async () => (await Promise.all(ids.map((id) => engine.run(id)))).every((v) => v.status === 'waiting'));

    let engine = await deploy(before);
    close = () => engine.close();
    await engine.start(before, {}, { id: 'old-1' });
    await engine.start(before, {}, { id: 'old-2' });
    await waiting(engine, 'old-1', 'old-2');
    await engine.close();

    engine = await deploy(withPatch);
    await engine.start(withPatch, {}, { id: 'new-1' });
    await waiting(engine, 'new-1');
    expect((await runsNeedingPatch(engine.store, 'fraud-check')).map((r) => r.id).sort()).toEqual(['old-1', 'old-2']);
    await engine.signal('new-1', 'go', null);
    await engine.signal('old-1', 'go', null);
    expect(await engine.runtime.handle('new-1').result()).toBe('shipped:checked');
    expect(await engine.runtime.handle('old-1').result()).toBe('shipped:unchecked');
    expect((await engine.run('old-1')).patches).toEqual({ 'fraud-check': false });
    expect((await engine.run('new-1')).patches).toEqual({ 'fraud-check': true });
    expect((await runsNeedingPatch(engine.store, 'fraud-check')).map((r) => r.id)).toEqual(['old-2']);
    await engine.close();

    // code without the old branch, deployed too early: old-2 stops at deprecatePatch and waits; new runs are fine
    engine = await deploy(deprecated);
    const fresh = await engine.start(deprecated, {}, { id: 'new-2' });
    await waiting(engine, 'new-2');
    await engine.signal('new-2', 'go', null);
    expect(await fresh.result()).toBe('shipped:checked');
    await engine.signal('old-2', 'go', null);
    const refused = await eventually(async () =>
      (await engine.queue.list({ queue: RUN_QUEUE, limit: 100 })).find(
        (t) => t.orderingKey === 'old-2' && t.lastError?.includes('old branch'),
      ),
    );
    expect(refused.lastError).toContain("change 'fraud-check'");
    expect((await engine.run('old-2')).status).toBe('waiting');
    const started = (await engine.journal.readStream('run:old-2'))
      .filter((e) => e.type === 'step.started')
      .map((e) => (e.data as { name: string }).name);
    expect(started).toEqual(['charge']);
    await engine.close();

    // the patched code back: old-2 ends on its old branch
    engine = await deploy(withPatch);
    expect(await engine.runtime.handle('old-2').result()).toBe('shipped:unchecked');
    const types = (await engine.journal.readStream('run:old-2')).map((e) => e.type);
    expect(types.filter((t) => t === 'run.failed')).toEqual([]);
    expect(await runsNeedingPatch(engine.store, 'fraud-check')).toEqual([]);
  }, 60_000);
});
