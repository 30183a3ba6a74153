import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { RUN_QUEUE } from './runtime.js';
import { RUN_STEPS, RUN_VIEW, type RunView } from './read/view.js';
import { workflow } from './workflow.js';

const many = workflow('many', async (ctx, n: number) => {
  for (let i = 0; i < n; i++) await ctx.step(`s${i}`, async () => i * 2);
  return n;
});

// two branches of 40 steps each, then 30 more: the branches' steps end interleaved
const branches = workflow('branches', async (ctx) => {
  const branch = (tag: string) => async (c: typeof ctx) => {
    for (let i = 0; i < 40; i++) await c.step(`${tag}${i}`, async () => i);
  };
  await ctx.parallel('both', { a: branch('a'), b: branch('b') });
  for (let i = 0; i < 30; i++) await ctx.step(`after${i}`, async () => i);
  return 'done';
});

const generations = workflow('generations', async (ctx, gen: number) => {
  for (let i = 0; i < (gen === 0 ? 120 : 10); i++) await ctx.step(`g${gen}-${i}`, async () => i);
  return gen === 0 ? ctx.continueAsNew(1) : gen;
});

describe.each(backends)('step pages on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const open = async (): Promise<Engine> => {
    const made = await testEngine(backend, { workflows: [many, branches, generations] });
    close = made.close;
    return made.engine;
  };
  const stored = async (engine: Engine, id: string) =>
    (await engine.store.projectionGet({ name: RUN_VIEW, key: id })) as RunView;

  it('keeps at most 50 ended steps in the view and shows every step, in order, on read', async () => {
    const engine = await open();
    await (await engine.start(many, 130, { id: 'long' })).result();
    const row = await stored(engine, 'long');
    expect(row.stepPages).toBe(2);
    expect(row.steps.length).toBe(30);
    const view = await engine.run('long');
    expect(view.steps.map((s) => s.name)).toEqual(Array.from({ length: 130 }, (_, i) => `s${i}`));
    expect(view.steps.every((s, i) => s.status === 'success' && s.output === i * 2)).toBe(true);
    expect(view.stepPages).toBeUndefined();
    const page = (await engine.store.projectionGet({ name: RUN_STEPS, key: 'long#1' })) as unknown[];
    expect(page.length).toBe(50);
  });

  it('lists parallel steps in call order across pages', async () => {
    const engine = await open();
    await (await engine.start(branches, null, { id: 'par' })).result();
    expect((await stored(engine, 'par')).stepPages).toBeGreaterThan(0);
    const names = (await engine.run('par')).steps.map((s) => s.name);
    const expected = [
      ...Array.from({ length: 40 }, (_, i) => `a${i}`),
      ...Array.from({ length: 40 }, (_, i) => `b${i}`),
      ...Array.from({ length: 30 }, (_, i) => `after${i}`),
    ];
    expect(names).toEqual(expected);
  });

  it('drops the pages of a generation when the run continues as new, and retention drops the rest', async () => {
    const engine = await open();
    await (await engine.start(generations, 0, { id: 'gen' })).result();
    const row = await stored(engine, 'gen');
    expect(row.generation).toBe(1);
    expect(row.stepPages).toBe(0);
    expect((await engine.run('gen')).steps.map((s) => s.name)).toEqual(Array.from({ length: 10 }, (_, i) => `g1-${i}`));
    expect(await engine.store.projectionList({ name: RUN_STEPS, limit: 10 })).toEqual([]);

    await (await engine.start(many, 60, { id: 'old' })).result();
    expect(await engine.store.projectionList({ name: RUN_STEPS, limit: 10 })).toHaveLength(1);
    // a run's last pass commits its task after the run ended; until then retention leaves the run alone
    await eventually(async () =>
      (await engine.store.taskStats()).every((q) => q.queue !== RUN_QUEUE || q.running + q.ready === 0),
    );
    const [pruned] = await engine.retention.prune({ runs: 0 }, { pauseMs: 0 });
    expect(pruned!.runs).toBe(2);
    expect(await engine.store.projectionList({ name: RUN_STEPS, limit: 10 })).toEqual([]);
  });
});
