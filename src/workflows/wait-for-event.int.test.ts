import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { triggers, type TriggerService } from '../triggers/service.js';
import { createRunStarter } from '../triggers/starter.js';
import type { WorkflowService } from './service.js';

/** Waits for the payment of the trigger's order, by correlation: nobody sending the event knows the execution. */
const payment = (lookback?: string) => ({
  name: 'await-payment',
  steps: [
    {
      id: 'paid',
      type: 'wait_for_event',
      config: {
        event: 'payment.received',
        match: 'data.order_id == {{trigger.order_id}}',
        timeout: '1m',
        ...(lookback ? { lookback } : {}),
      },
    },
    { id: 'amount', type: 'transform', config: { mapping: { amount: '{{steps.paid.output.detail.amount}}' } } },
  ],
});

describe.each(backends)('a stored wait_for_event step resumed by a business event on $name', (backend) => {
  let engine: Engine;
  let workflows: WorkflowService;
  let events: TriggerService;
  let close: () => Promise<void>;
  let saved = 0;

  const put = (detail: Record<string, unknown>, id?: string) =>
    events.events.put([{ source: 'shop', 'detail-type': 'payment.received', detail, ...(id ? { id } : {}) }]);
  const start = async (lookback: string | undefined, orderId: number) => {
    const wf = await workflows.definitions.create({ ...payment(lookback), name: `await-payment-${++saved}` });
    const { execution_id } = await workflows.executions.execute(wf.id, { trigger_data: { order_id: orderId } });
    return { wid: wf.id, eid: execution_id };
  };
  const waiting = (eid: string) => eventually(async () => (await engine.run(eid)).status === 'waiting');
  const finished = (wid: string, eid: string) =>
    eventually(async () => {
      const r = await workflows.executions.get(wid, eid);
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    }, 20_000);

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const starter = createRunStarter({ engine, store: engine.store, workflows });
    events = triggers(engine, engine.store, { starter, schedulerEnabled: false });
    await events.start();
    close = async () => {
      await events.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  it('resumes only the execution whose order the event names; its output is the event', async () => {
    const [one, two] = [await start(undefined, 1), await start(undefined, 2)];
    await Promise.all([waiting(one.eid), waiting(two.eid)]);
    const { event } = (await put({ order_id: 2, amount: 30 }))[0]!;
    const done = await finished(two.wid, two.eid);
    expect(done.status).toBe('success');
    expect(done.steps[0]!.output).toMatchObject({ id: event.id, detail: { order_id: 2, amount: 30 } });
    expect(done.steps[1]!.output).toEqual({ amount: 30 });
    expect((await engine.run(one.eid)).status).toBe('waiting');
  });

  it('takes an event that arrived before the wait within its lookback', async () => {
    await put({ order_id: 7, amount: 70 }, 'evt-early');
    const { wid, eid } = await start('10m', 7);
    const done = await finished(wid, eid);
    expect(done.steps[0]!.output).toMatchObject({ id: 'evt-early', detail: { amount: 70 } });
  });

  it('cancels an execution on a business event its cancel_on matches, rendered with its trigger data', async () => {
    const wf = await workflows.definitions.create({
      ...payment(),
      name: 'cancel-on-order',
      cancel_on: [{ event: 'order.cancelled', match: 'data.order_id == {{trigger.order_id}}' }],
    });
    const run = async (n: number) =>
      (await workflows.executions.execute(wf.id, { trigger_data: { order_id: n } })).execution_id;
    const [keep, cancel] = [await run(1), await run(2)];
    await Promise.all([waiting(keep), waiting(cancel)]);
    await events.events.put([{ source: 'shop', 'detail-type': 'order.cancelled', detail: { order_id: 2 } }]);
    await eventually(async () => (await engine.run(cancel)).status === 'cancelled');
    expect((await engine.run(keep)).status).toBe('waiting');
    const bad = workflows.definitions.create({
      ...payment(),
      name: 'bad',
      cancel_on: [{ event: 'x', match: 'order == 1' }],
    });
    await expect(bad).rejects.toThrow(/cancel_on\[0\]\.match/);
  });
});
