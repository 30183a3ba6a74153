import { randomBytes } from 'node:crypto';
import { Command } from 'commander';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { triggerCommands } from '../cli/trigger.js';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { mount } from '../server/app.js';
import { listen } from '../server/listen.js';
import { triggerRoutes } from '../server/routes/triggers.js';
import { workflowRoutes } from '../server/routes/workflows.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { EVENT_RECEIVED, EVENT_ROUTED } from './events.js';
import { ROUTING_SUBSCRIPTION, triggers, type TriggerService } from './service.js';
import { createRunStarter, runIdFor } from './starter.js';

const echo = workflow('echo', async (_ctx, input: unknown) => input);

const greet = {
  name: 'greet',
  steps: [
    {
      id: 'hello',
      type: 'transform',
      config: { template: 'Hello {{trigger.name | upper}} from {{trigger.via}}', output_key: 'greeting' },
    },
  ],
};

/** An engine with stored workflows, the `echo` code workflow and the trigger service, on its own database. */
async function setup(engine: Engine) {
  engine.register(echo);
  const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
  const starter = createRunStarter({ engine, store: engine.store, workflows });
  const service = triggers(engine, engine.store, { starter, schedulerEnabled: false });
  const app = mount(new Hono(), [...workflowRoutes(workflows), ...triggerRoutes(service)]);
  return { service, app };
}

describe.each(backends)('events and rules on $name', (backend) => {
  let engine: Engine;
  let service: TriggerService;
  let app: Hono;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown, target = app) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await target.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const routed = (id: string) =>
    eventually(async () =>
      (await call('GET', `/events/${id}`)).body.routed ? (await call('GET', `/events/${id}`)).body : undefined,
    );
  const count = async (type: string, streamPrefix?: string) =>
    (await engine.journal.readAll({ types: [type], limit: 10_000, ...(streamPrefix ? { streamPrefix } : {}) })).length;
  const rule = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/rules', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; name: string };
  };

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    second = t.second;
    ({ service, app } = await setup(engine));
    await service.start();
    close = async () => {
      await service.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  it('validates envelopes and batches, naming the JSON path, and stores nothing from a bad request', async () => {
    const missing = await call('POST', '/events', { detail: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.problems).toEqual(
      expect.arrayContaining([
        { path: 'source', message: 'required' },
        { path: 'detail-type', message: 'required' },
      ]),
    );

    const ok = { source: 'shop', 'detail-type': 'order.paid', detail: { n: 1 } };
    const badBatch = await call('POST', '/events', [ok, ok, ok, { source: 'shop' }]);
    expect(badBatch.status).toBe(400);
    expect(badBatch.body.error.message).toBe('[3].detail-type: required');

    const mixed = await call('POST', '/events', [
      { ...ok, time: 'yesterday' },
      { ...ok, detail: [1] },
      { ...ok, id: 'a b' },
      { ...ok, colour: 'red' },
      'text',
      { ...ok, id: 'stream' },
    ]);
    expect(mixed.body.error.problems.map((p: { path: string }) => p.path)).toEqual([
      '[0].time',
      '[1].detail',
      '[2].id',
      '[3]',
      '[4]',
      '[5].id',
    ]);

    const tooMany = await call(
      'POST',
      '/events',
      Array.from({ length: 101 }, () => ok),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.message).toMatch(/has 101 events, over the limit of 100/);
    expect((await call('POST', '/events', [])).status).toBe(400);

    const big = await call('POST', '/events', { ...ok, detail: { blob: 'x'.repeat(300 * 1024) } });
    expect(big.status).toBe(400);
    expect(big.body.error.problems[0]).toMatchObject({
      path: 'detail',
      message: expect.stringMatching(/over the limit of 256 KiB/),
    });

    expect((await call('GET', '/events')).body).toEqual({ events: [], count: 0, last_key: null });
    expect(await count(EVENT_RECEIVED)).toBe(0);

    const batch = await call('POST', '/events', [
      ok,
      { ...ok, id: 'order-7', time: '2025-01-02T03:04:05+02:00' },
      { ...ok, detail: undefined },
    ]);
    expect(batch.status).toBe(202);
    expect(batch.body.count).toBe(3);
    expect(batch.body.events[1]).toEqual({ id: 'order-7', duplicate: false });
    expect(batch.body.events[0].id).toMatch(/^evt_[0-9A-Z]{26}$/);
    const seven = (await call('GET', '/events/order-7')).body;
    expect(seven.envelope).toEqual({
      id: 'order-7',
      source: 'shop',
      'detail-type': 'order.paid',
      detail: { n: 1 },
      time: '2025-01-02T01:04:05.000Z',
    });
    expect((await call('GET', `/events/${batch.body.events[2].id}`)).body.envelope.detail).toEqual({});

    const first = await call('GET', '/events?limit=2');
    expect(first.body.events.map((e: { id: string }) => e.id)).toEqual([batch.body.events[2].id, 'order-7']);
    const rest = await call('GET', `/events?limit=2&last_key=${first.body.last_key}`);
    expect(rest.body).toMatchObject({ count: 1, last_key: null, events: [{ id: batch.body.events[0].id }] });
    expect((await call('GET', '/events/nope')).status).toBe(404);
  });

  it('stores a repeated id once and starts one run, also when the repeats arrive at once', async () => {
    await rule({ name: 'dup', pattern: { source: ['dup'] }, target: { workflow: 'echo' } });
    const envelope = { id: 'delivery-1', source: 'dup', 'detail-type': 'ping', detail: { attempt: 1 } };
    const first = await call('POST', '/events', envelope);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ id: 'delivery-1', duplicate: false });
    const again = await call('POST', '/events', { ...envelope, detail: { attempt: 2 } });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: 'delivery-1', duplicate: true, envelope: { detail: { attempt: 1 } } });

    const concurrent = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        call('POST', '/events', { ...envelope, id: 'delivery-2', detail: { attempt: i } }),
      ),
    );
    expect(concurrent.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 202]);
    const mixedBatch = await call('POST', '/events', [
      { ...envelope, id: 'delivery-3' },
      envelope,
      { ...envelope, id: 'delivery-3' },
    ]);
    expect(mixedBatch.status).toBe(202);
    expect(mixedBatch.body.events.map((e: { duplicate: boolean }) => e.duplicate)).toEqual([false, true, true]);

    for (const id of ['delivery-1', 'delivery-2', 'delivery-3']) expect((await routed(id)).matches).toHaveLength(1);
    expect(await count(EVENT_RECEIVED)).toBe(3);
    expect(await count(EVENT_ROUTED)).toBe(3);
    expect(await count('run.started', 'run:')).toBe(3);
    expect((await call('GET', '/events')).body.count).toBe(3);
  });

  it('starts a code workflow run and a stored workflow execution with the mapped input', async () => {
    const wf = (await call('POST', '/workflows', greet)).body;
    const code = await rule({
      name: 'to-code',
      pattern: { source: ['shop'], detail: { amount: [{ numeric: ['>=', 100] }] } },
      target: { workflow: 'echo' },
      input: { order: '$.detail.order', first: '$.detail.items[0]', plan: 'pro', missing: '$.detail.nope' },
    });
    const stored = await rule({
      name: 'to-stored',
      pattern: { 'detail-type': ['order.paid'] },
      target: { workflow: wf.id },
      input: { name: '$.detail.customer', via: '$.source' },
    });
    const whole = await rule({
      name: 'whole-event',
      pattern: { detail: { customer: [{ prefix: 'ad' }] } },
      target: { workflow: 'echo' },
    });
    const res = await call('POST', '/events', {
      id: 'o-1',
      source: 'shop',
      'detail-type': 'order.paid',
      detail: { amount: 150, order: 'o-1', items: [{ sku: 'A1' }], customer: 'ada' },
    });
    expect(res.body.routed).toBe(false);

    const event = await routed('o-1');
    expect(event.matches).toHaveLength(3);
    const byRule = new Map(event.matches.map((m: { rule_id: string }) => [m.rule_id, m]));
    expect(byRule.get(code.id)).toEqual({
      rule_id: code.id,
      rule_name: 'to-code',
      run_id: runIdFor(`o-1:${code.id}`),
      kind: 'workflow',
    });
    expect(byRule.get(stored.id)).toMatchObject({
      rule_name: 'to-stored',
      run_id: expect.stringMatching(/^ex_/),
      kind: 'execution',
    });

    const output = await engine.runtime.handle(runIdFor(`o-1:${code.id}`)).result();
    expect(output).toEqual({ order: 'o-1', first: { sku: 'A1' }, plan: 'pro', missing: null });
    const envelope = await engine.runtime.handle(runIdFor(`o-1:${whole.id}`)).result();
    expect(envelope).toEqual(res.body.envelope);

    const executionId = (byRule.get(stored.id) as { run_id: string }).run_id;
    const execution = await eventually(async () => {
      const r = (await call('GET', `/workflows/${wf.id}/executions/${executionId}`)).body;
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    });
    expect(execution).toMatchObject({
      status: 'success',
      trigger_type: 'event',
      trigger_data: { name: 'ada', via: 'shop' },
    });
    expect(execution.steps[0].output).toEqual({ greeting: 'Hello ADA from shop' });
  });

  it('starts nothing for an event no enabled rule matches, nor by a rule created after the event', async () => {
    const big = await rule({
      name: 'big',
      pattern: { source: ['shop'], detail: { amount: [{ numeric: ['>', 100] }] } },
      target: { workflow: 'echo' },
    });
    const off = await rule({
      name: 'off',
      pattern: { source: ['shop'] },
      target: { workflow: 'echo' },
      enabled: false,
    });
    expect((await call('GET', `/rules/${off.id}`)).body.enabled).toBe(false);
    await call('POST', '/events', { id: 'small', source: 'shop', 'detail-type': 'order.paid', detail: { amount: 50 } });
    await call('POST', '/events', {
      id: 'other',
      source: 'bank',
      'detail-type': 'order.paid',
      detail: { amount: 500 },
    });
    expect((await routed('small')).matches).toEqual([]);
    expect((await routed('other')).matches).toEqual([]);

    await service.stop();
    await call('POST', '/events', {
      id: 'early',
      source: 'shop',
      'detail-type': 'order.paid',
      detail: { amount: 500 },
    });
    await rule({ name: 'late', pattern: { source: ['shop'] }, target: { workflow: 'echo' } });
    await service.start();
    expect((await routed('early')).matches.map((m: { rule_id: string }) => m.rule_id)).toEqual([big.id]);

    expect((await call('POST', `/rules/${off.id}/enable`)).body.enabled).toBe(true);
    await call('POST', '/events', { id: 'now-on', source: 'shop', 'detail-type': 'x', detail: { amount: 1 } });
    expect((await routed('now-on')).matches.map((m: { rule_name: string }) => m.rule_name).sort()).toEqual([
      'late',
      'off',
    ]);
    expect(await count('run.started', 'run:')).toBe(3);
  });

  it('answers a bad rule with 400 naming every problem by path, and stores nothing', async () => {
    const bad = await call('POST', '/rules', {
      name: 'bad name!',
      pattern: { source: 'shop', detail: { amount: [{ numeric: ['>', 'x'] }], tag: [{ prefix: 1 }] } },
      target: { workflow: 'nope' },
      input: { id: '$.detail..id' },
      colour: 'red',
    });
    expect(bad.status).toBe(400);
    const paths = bad.body.error.problems.map((p: { path: string }) => p.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'name',
        '(body)',
        'pattern.source',
        'pattern.detail.amount[0].numeric[1]',
        'pattern.detail.tag[0].prefix',
        'input.id',
        'target.workflow',
      ]),
    );
    expect(
      (await call('POST', '/rules', { name: 'a', pattern: {}, target: { agent: 'helper' } })).body.error.problems,
    ).toEqual([
      { path: 'pattern', message: 'must name at least one field' },
      { path: 'target.agent', message: 'no agents are registered' },
    ]);
    expect(
      (await call('POST', '/rules', { name: 'a', pattern: { source: ['x'] }, target: { workflow: 'wf_missing' } })).body
        .error.problems,
    ).toEqual([{ path: 'target.workflow', message: "names no stored workflow: 'wf_missing'" }]);
    expect(
      (
        await call('POST', '/rules', {
          name: 'a',
          pattern: { source: ['x'] },
          target: { workflow: 'echo', agent: 'b' },
        })
      ).status,
    ).toBe(400);
    expect((await call('GET', '/rules')).body).toEqual({ rules: [], count: 0, last_key: null });

    const made = await rule({ name: 'unique', pattern: { source: ['x'] }, target: { workflow: 'echo' } });
    expect(made).toMatchObject({ input: '$', enabled: true });
    const taken = await Promise.all(
      [1, 2].map(() =>
        call('POST', '/rules', { name: 'twin', pattern: { source: ['x'] }, target: { workflow: 'echo' } }),
      ),
    );
    expect(taken.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(
      (await call('POST', '/rules', { name: 'unique', pattern: { source: ['y'] }, target: { workflow: 'echo' } }))
        .status,
    ).toBe(409);
    expect((await call('DELETE', `/rules/${made.id}`)).status).toBe(204);
    expect((await call('GET', `/rules/${made.id}`)).status).toBe(404);
    expect(
      (await call('POST', '/rules', { name: 'unique', pattern: { source: ['y'] }, target: { workflow: 'echo' } }))
        .status,
    ).toBe(201);
  });

  it('records a rule whose target cannot start on the event, and still starts the others', async () => {
    const wf = (await call('POST', '/workflows', greet)).body;
    await rule({ name: 'gone', pattern: { source: ['s'] }, target: { workflow: wf.id } });
    await rule({ name: 'fine', pattern: { source: ['s'] }, target: { workflow: 'echo' } });
    await call('DELETE', `/workflows/${wf.id}`);
    await call('POST', '/events', { id: 'e1', source: 's', 'detail-type': 't' });
    const matches = (await routed('e1')).matches;
    expect(matches.find((m: { rule_name: string }) => m.rule_name === 'gone')).toMatchObject({
      run_id: null,
      kind: null,
      error: `NotFoundError: workflow ${wf.id} not found`,
    });
    expect(matches.find((m: { rule_name: string }) => m.rule_name === 'fine')).toMatchObject({ kind: 'workflow' });
    expect(await engine.parked(ROUTING_SUBSCRIPTION)).toEqual([]);
  });

  it('routes an event stored while no process routes once one starts, exactly once', async () => {
    await rule({ name: 'r', pattern: { source: ['s'] }, target: { workflow: 'echo' } });
    await service.stop();
    await call('POST', '/events', { id: 'while-down', source: 's', 'detail-type': 't', detail: { v: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call('GET', '/events/while-down')).body).toMatchObject({ routed: false, matches: [] });

    // another process takes over the routing
    const other = await setup(await second());
    await other.service.start();
    try {
      const event = await routed('while-down');
      expect(event.matches).toHaveLength(1);
      await engine.runtime.handle(event.matches[0].run_id).result();
      await service.start();
      await call('POST', '/events', { id: 'after', source: 's', 'detail-type': 't' });
      await routed('after');
      expect(await count(EVENT_ROUTED)).toBe(2);
      expect(await count('run.started', 'run:')).toBe(2);
    } finally {
      await other.service.stop();
    }
  });

  it('runledger trigger sends an event and prints the runs it started', async () => {
    const cli = await rule({
      name: 'cli',
      pattern: { 'detail-type': ['execute-agent'] },
      target: { workflow: 'echo' },
    });
    const listening = await listen(app, { host: '127.0.0.1', port: 0 });
    const lines: string[] = [];
    const run = (...args: string[]) => {
      const program = new Command('runledger').exitOverride();
      triggerCommands(program, (line) => lines.push(line));
      return program.parseAsync(['node', 'runledger', 'trigger', '--url', listening.url, ...args]);
    };
    try {
      await run(
        '--source',
        'manual-trigger',
        '--detail-type',
        'execute-agent',
        '--detail',
        '{"prompt":"hi"}',
        '--id',
        'cli-1',
      );
      expect(lines).toEqual([
        'event cli-1 stored',
        `rule cli (${cli.id}) → workflow ${runIdFor(`cli-1:${cli.id}`)} started`,
      ]);
      lines.length = 0;
      await run('--source', 'manual-trigger', '--detail-type', 'execute-agent', '--id', 'cli-1');
      expect(lines[0]).toBe('event cli-1 was stored before: nothing new started');
      lines.length = 0;
      await run('--source', 'x', '--detail-type', 'y');
      expect(lines).toEqual([expect.stringMatching(/^event evt_\w+ stored$/), 'no rule matched']);
      await expect(run('--source', '', '--detail-type', 'y')).rejects.toThrow(/POST \/events: 400 source: /);
    } finally {
      await listening.close();
    }
  });
});
