import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { workflow, type Workflow } from '../workflow.js';

const quick = { initialDelay: '10ms', interval: '20ms', factor: 1.5, maxInterval: '50ms' };

/** A job that never ends by itself; its cancel is accepted at once and confirmed after `confirmAfter` status polls. */
function pipeline(name: string, order: string[], confirmAfter: number, maxWait = '10s') {
  let status = 'processing';
  let polls = 0;
  return workflow(name, async (ctx) => {
    await ctx.step('create', async () => 'sess-1', { compensate: async () => void order.push('delete session') });
    return ctx.poll('render', async () => ({ status }), {
      ...quick,
      until: (j) => j.status === 'complete',
      maxWait: '1h',
      cancel: {
        send: async () => {
          order.push('cancel render');
          status = 'cancelling';
        },
        until: {
          ...quick,
          maxWait,
          poll: async () => {
            order.push('poll');
            if (++polls >= confirmAfter) status = 'cancelled';
            return { status };
          },
          until: (j) => j.status === 'cancelled',
        },
      },
    });
  });
}

describe.each(backends)("ctx.poll's cancel confirmed by polling (brief 004 §8.1) on $name", (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Workflow[]): Promise<Engine> => {
    const made = await testEngine(backend, { workflows, pollMs: 100 });
    close = made.close;
    return made.engine;
  };
  const types = async (engine: Engine, id: string) => (await engine.journal.readStream(`run:${id}`)).map((e) => e.type);

  it('ends the run cancelled only once the cancel is confirmed, each poll a durable timer, older compensations after', async () => {
    const order: string[] = [];
    const wf = pipeline('confirmed', order, 3);
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'confirm-1' });
    await eventually(async () => (await types(engine, 'confirm-1')).includes('poll.attempted'));
    await engine.cancel('confirm-1');
    await eventually(async () => (await engine.run('confirm-1')).status === 'cancelled');
    expect(order).toEqual(['cancel render', 'poll', 'poll', 'poll', 'delete session']);
    const journal = await types(engine, 'confirm-1');
    const tail = journal.slice(journal.indexOf('compensation.started'));
    expect(tail).toEqual([
      'compensation.started',
      'compensation.confirming',
      'compensation.polled',
      'compensation.polled',
      'compensation.completed',
      'compensation.started',
      'compensation.completed',
      'run.cancelled',
    ]);
    const run = await engine.run('confirm-1');
    expect(run.compensations).toEqual({ ran: 2, failed: 0 });
    expect(run.steps.find((s) => s.name === 'render')?.cancel).toEqual({ status: 'confirmed', polls: 3, reason: null });
  });

  it('gives up after maxWait: the cancel is unconfirmed, the run cancelled all the same', async () => {
    const order: string[] = [];
    const wf = pipeline('unconfirmed', order, Number.POSITIVE_INFINITY, '200ms');
    const engine = await engineWith(wf);
    await engine.start(wf, {}, { id: 'confirm-2' });
    await eventually(async () => (await types(engine, 'confirm-2')).includes('poll.attempted'));
    await engine.cancel('confirm-2');
    await eventually(async () => (await engine.run('confirm-2')).status === 'cancelled');
    expect(order.at(-1)).toBe('delete session');
    const cancel = (await engine.run('confirm-2')).steps.find((s) => s.name === 'render')?.cancel;
    expect(cancel).toMatchObject({
      status: 'unconfirmed',
      reason: expect.stringMatching(/^not confirmed within 0.2 s/),
    });
  });

  it('refuses a cancel.until without its poll function, naming it', async () => {
    const bad = workflow('bad', async (ctx) =>
      ctx.poll('render', async () => 1, {
        until: () => true,
        cancel: { send: async () => {}, until: { until: () => true } as never },
      }),
    );
    const engine = await engineWith(bad);
    const run = await engine.start(bad, {}, { id: 'confirm-3' });
    await expect(run.result()).rejects.toThrow(/poll\(render\)\.cancel\.until\.poll/);
  });
});
