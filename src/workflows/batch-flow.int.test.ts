import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { mount } from '../server/app.js';
import { controlRoutes } from '../server/routes/control.js';
import { triggerRoutes } from '../server/routes/triggers.js';
import { workflowRoutes } from '../server/routes/workflows.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { triggers, type TriggerService } from '../triggers/service.js';
import { createRunStarter } from '../triggers/starter.js';

const collect = workflow('collect', async (_ctx, inputs: unknown) => inputs);
const fives = workflow('fives', { batch: { maxSize: 5, timeout: '1h' } }, async (_ctx, inputs: unknown[]) => inputs);
const log = [{ id: 'say', type: 'log', config: { message: 'a batch' } }];

describe.each(backends)('batching over HTTP, in stored definitions and from trigger events on $name', (backend) => {
  let engine: Engine;
  let app: Hono;
  let service: TriggerService;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const t = await testEngine(backend, { workflows: [collect, fives], pollMs: 50 });
    engine = t.engine;
    const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const starter = createRunStarter({ engine, store: engine.store, workflows });
    service = triggers(engine, engine.store, { starter, schedulerEnabled: false });
    await service.start();
    app = mount(new Hono(), [...controlRoutes(engine), ...workflowRoutes(workflows), ...triggerRoutes(service)]);
    close = async () => {
      await service.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
    );
    return { status: res.status, body: await res.json() };
  };
  const paths = (res: { body: { error: { problems: Array<{ path: string }> } } }) =>
    res.body.error.problems.map((p) => p.path);

  it('takes batch on POST /runs, answering each start with its batch run, and 400s naming the field', async () => {
    const batch = { key: 'input.user', max_size: 2, timeout: '1h' };
    const first = await call('POST', '/runs', { workflow: 'collect', input: { user: 'ada', n: 1 }, batch });
    const second = await call('POST', '/runs', { workflow: 'collect', input: { user: 'ada', n: 2 }, batch });
    expect(first.status).toBe(202);
    expect(second.body.run_id).toBe(first.body.run_id);
    expect(await engine.runtime.handle(first.body.run_id).result({ pollMs: 50 })).toEqual([
      { user: 'ada', n: 1 },
      { user: 'ada', n: 2 },
    ]);
    // an Idempotency-Key repeated answers the batch's run once more, its input not added again
    const keyedCall = (n: number, key: string) =>
      app.fetch(
        new Request('http://api/runs', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify({ workflow: 'collect', input: { user: 'bo', n }, batch }),
        }),
      );
    const k1 = await (await keyedCall(1, 'k-1')).json();
    const again = await (await keyedCall(1, 'k-1')).json();
    const k2 = await (await keyedCall(2, 'k-2')).json();
    expect([k1.duplicate, again.duplicate, k2.duplicate]).toEqual([false, true, false]);
    expect(new Set([k1.run_id, again.run_id, k2.run_id]).size).toBe(1);
    expect(await engine.runtime.handle(k1.run_id).result({ pollMs: 50 })).toEqual([
      { user: 'bo', n: 1 },
      { user: 'bo', n: 2 },
    ]);
    const bad = async (b: unknown, input: unknown = { user: 'ada' }) =>
      call('POST', '/runs', { workflow: 'collect', input, batch: b });
    for (const [b, path] of [
      [{ max_size: 0, timeout: '1s' }, 'batch.max_size'],
      [{ max_size: 10_001, timeout: '1s' }, 'batch.max_size'],
      [{ max_size: 2, timeout: '25h' }, 'batch.timeout'],
      [{ max_size: 2, timeout: '0.5s' }, 'batch.timeout'],
      [{ max_size: 2, timeout: '1s', key: 'input.' }, 'batch.key'],
      [{ maxSize: 2, timeout: '1s' }, 'batch'],
    ] as const) {
      const res = await bad(b);
      expect(res.status, JSON.stringify(b)).toBe(400);
      expect(paths(res)[0], JSON.stringify(res.body)).toMatch(new RegExp(`^${path.replace('.', '\\.')}`));
    }
    const missing = await bad({ key: 'input.team', max_size: 2, timeout: '1s' });
    expect(missing.status).toBe(400);
    expect(paths(missing)).toEqual(['batch.key']);
    const both = await call('POST', '/runs', {
      workflow: 'collect',
      input: {},
      batch: { max_size: 2, timeout: '1s' },
      debounce: { period: '1s' },
    });
    expect(both.status).toBe(400);
    expect(paths(both)).toEqual(['batch']);
  });

  it("checks a stored definition's batch at save time and runs a batch of executions as one, its trigger data the list", async () => {
    for (const [batch, path] of [
      [{ max_size: 0, timeout: '1s' }, 'batch.max_size'],
      [{ max_size: 3, timeout: '2d' }, 'batch.timeout'],
      [{ max_size: 3, timeout: '1s', key: 'input.user' }, 'batch.key'],
    ] as const) {
      const res = await call('POST', '/workflows', { name: 'bad-batch', batch, steps: log });
      expect(res.status).toBe(400);
      expect(paths(res)).toEqual([path]);
    }
    const both = await call('POST', '/workflows', {
      name: 'bad-batch',
      batch: { max_size: 3, timeout: '1s' },
      throttle: { limit: 1, period: '1s' },
      steps: log,
    });
    expect(both.status).toBe(400);
    expect(paths(both)).toEqual(['batch']);

    const created = await call('POST', '/workflows', {
      name: 'digest',
      batch: { key: 'trigger.user', max_size: 3, timeout: '1h' },
      steps: log,
    });
    expect(created.status).toBe(201);
    expect(created.body.batch).toEqual({ key: 'trigger.user', max_size: 3, timeout: '1h' });
    const ids: string[] = [];
    for (const n of [1, 2, 3, 4]) {
      const res = await call('POST', `/workflows/${created.body.id}/execute`, { trigger_data: { user: 'ada', n } });
      expect(res.status).toBe(202);
      ids.push(res.body.execution_id);
    }
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(ids[3]).not.toBe(ids[0]);
    const done = await eventually(async () => {
      const r = (await call('GET', `/workflows/${created.body.id}/executions/${ids[0]}`)).body;
      return r.status === 'success' && r;
    });
    expect(done.trigger_data).toEqual([1, 2, 3].map((n) => ({ user: 'ada', n })));
    const open = (await call('GET', `/workflows/${created.body.id}/executions/${ids[3]}`)).body;
    expect(open.trigger_data).toEqual([{ user: 'ada', n: 4 }]);
    // one row per execution: the batch's three starts are one
    const listed = (await call('GET', `/workflows/${created.body.id}/executions`)).body.executions;
    expect(listed.map((e: { execution_id: string }) => e.execution_id).sort()).toEqual([ids[0], ids[3]].sort());
  });

  it('starts one run with 5 inputs from 5 trigger events, for a batched code workflow and a stored one', async () => {
    const stored = await call('POST', '/workflows', {
      name: 'event-digest',
      batch: { max_size: 5, timeout: '1h' },
      steps: log,
    });
    for (const target of [{ workflow: 'fives' }, { workflow: stored.body.id }]) {
      const res = await call('POST', '/rules', {
        name: `to-${target.workflow}`,
        pattern: { 'detail-type': ['order.paid'] },
        target,
        input: { order: '$.detail.order' },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    const orders = ['o-1', 'o-2', 'o-3', 'o-4', 'o-5'];
    for (const order of orders)
      expect(
        (await call('POST', '/events', { id: order, source: 'shop', 'detail-type': 'order.paid', detail: { order } }))
          .status,
      ).toBe(202);
    type Match = { run_id: string; kind: string };
    const matches: Match[][] = await Promise.all(
      orders.map((id) =>
        eventually(async () => {
          const event = (await call('GET', `/events/${id}`)).body;
          return event.routed ? (event.matches as Match[]) : undefined;
        }),
      ),
    );
    const runs = new Set(matches.flatMap((m) => m.filter((x) => x.kind === 'workflow').map((x) => x.run_id)));
    const executions = new Set(matches.flatMap((m) => m.filter((x) => x.kind === 'execution').map((x) => x.run_id)));
    expect(runs.size).toBe(1);
    expect(executions.size).toBe(1);
    const output = (await engine.runtime.handle([...runs][0]!).result({ pollMs: 50 })) as Array<{ order: string }>;
    expect(output.map((i) => i.order).sort()).toEqual(orders);
    const done = await eventually(async () => {
      const r = (await call('GET', `/workflows/${stored.body.id}/executions/${[...executions][0]}`)).body;
      return r.status === 'success' && r;
    });
    expect((done.trigger_data as Array<{ order: string }>).map((t) => t.order).sort()).toEqual(orders);
  });
});
