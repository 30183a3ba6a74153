import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../../app/workflows.js';
import type { Engine } from '../../engine.js';
import { TerminalError } from '../../errors.js';
import { workflow } from '../../runtime/workflow.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import type { WorkflowService } from '../../workflows/service.js';
import { mount } from '../app.js';
import { runDiffRoutes } from './run-diff.js';

/** The card is declined until a test says otherwise: the first run fails its charge, its retry does not. */
let declined = true;

const checkout = workflow('checkout', async (ctx, input: { order: number }) => {
  const items = await ctx.step('load', async () => ({ order: input.order, items: 2 }));
  const receipt = await ctx.step('charge', async () => {
    if (declined) throw new TerminalError('card declined');
    return { receipt: `r-${items.order}` };
  });
  await ctx.step('ship', async () => ({ shipped: true }));
  return receipt;
});

describe.each(backends)('GET /runs/{a}/diff/{b} on $name', (backend) => {
  let engine: Engine;
  let service: WorkflowService;
  let app: Hono;
  let close: () => Promise<void>;

  beforeEach(async () => {
    declined = true;
    const t = await testEngine(backend, { workflows: [checkout], pollMs: 100 });
    engine = t.engine;
    close = t.close;
    service = storedWorkflows(engine, { secretKey: randomBytes(32) });
    app = mount(new Hono(), runDiffRoutes(engine, service.definitions));
  });
  afterEach(() => close());

  const json = async (path: string) => {
    const res = await app.fetch(new Request(`http://api${path}`));
    return { status: res.status, body: await res.json() };
  };
  /**
   * A step's name and what differs but its duration (one run made twice as slow by a busy machine has it too), or
   * `added` / `removed`.
   */
  const what = (s: { name: string; change: string; differs: string[] }) => [
    s.name,
    s.change === 'added' || s.change === 'removed' ? s.change : s.differs.filter((f) => f !== 'duration'),
  ];
  const ended = (id: string) =>
    eventually(async () => ['success', 'failed', 'partial_success'].includes((await engine.run(id)).status));

  it('aligns a failed run with its retry step by step: the failed charge changed, the ship step added', async () => {
    const original = await engine.start(checkout, { order: 7 });
    await ended(original.id);
    declined = false;
    const retry = await engine.runtime.restart(original.id, { by: 'ada', reason: 'card fixed' });
    await ended(retry);

    const { status, body } = await json(`/runs/${original.id}/diff/${retry}`);
    expect(status).toBe(200);
    expect(body.a).toMatchObject({
      id: original.id,
      status: 'failed',
      error: expect.stringContaining('card declined'),
    });
    expect(body.b).toMatchObject({ id: retry, status: 'success', output: { receipt: 'r-7' }, error: null });
    expect(body.differs).toEqual(expect.arrayContaining(['status', 'output', 'error']));
    expect(body.differs).not.toContain('input');
    expect(body.same).toBe(false);
    expect(body.counts).toMatchObject({ added: 1, removed: 0 });
    expect(body.steps.map(what)).toEqual([
      ['load', []],
      ['charge', ['status', 'output', 'error']],
      ['ship', 'added'],
    ]);
    const charge = body.steps[1];
    expect(charge.differs).toEqual(expect.arrayContaining(['status', 'output', 'error']));
    expect(charge.a).toMatchObject({ status: 'failed', error: expect.stringContaining('card declined'), output: null });
    expect(charge.b).toMatchObject({ status: 'success', error: null, output: { receipt: 'r-7' } });
    expect(body.steps[2]).toMatchObject({ a: null, b: { status: 'success', output: { shipped: true } } });

    // the other way round, the step only the retry has is removed
    const back = await json(`/runs/${retry}/diff/${original.id}`);
    expect(back.body.steps.map(what)).toEqual([
      ['load', []],
      ['charge', ['status', 'output', 'error']],
      ['ship', 'removed'],
    ]);
    // a run against itself: nothing differs
    const itself = await json(`/runs/${retry}/diff/${retry}`);
    expect(itself.body).toMatchObject({ same: true, differs: [], counts: { same: 3, changed: 0 } });
  });

  it("aligns a stored workflow's failed execution with its rerun, its reused step the same; 404 for an unknown run", async () => {
    const wf = await service.definitions.create({
      name: 'greet',
      steps: [
        { id: 'first', type: 'transform', config: { mapping: { word: '{{trigger.word}}' } } },
        { id: 'last', type: 'transform', config: { mapping: { x: '{{trigger.missing}}' } } },
      ],
    });
    const { execution_id } = await service.executions.execute(wf.id, { trigger_data: { word: 'hi' } });
    await ended(execution_id);
    expect((await engine.run(execution_id)).status).toBe('failed');
    const rerun = await service.executions.rerun(wf.id, execution_id, {
      from_step: 'last',
      trigger_data: { word: 'hi', missing: 1 },
    });
    await ended(rerun.execution_id);

    const { status, body } = await json(`/runs/${execution_id}/diff/${rerun.execution_id}`);
    expect(status).toBe(200);
    expect(body.a).toMatchObject({ kind: 'execution', workflow: 'greet', status: 'failed' });
    expect(body.b).toMatchObject({ kind: 'execution', workflow: 'greet', status: 'success' });
    // the step the rerun reused did no work: its input and duration are not compared
    expect(body.steps.map((s: { name: string; change: string }) => [s.name, s.change])).toEqual([
      ['first', 'same'],
      ['last', 'changed'],
    ]);
    expect(body.steps[1].differs).toEqual(expect.arrayContaining(['status', 'error']));

    const missing = await json(`/runs/${execution_id}/diff/run_nope`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain('run_nope');
  });
});
