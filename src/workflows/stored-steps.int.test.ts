import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { cancelReasons } from './cancel-reason.js';
import { Definitions } from './definitions.js';
import { Executions } from './executions.js';
import { storedWorkflow } from './interpreter.js';
import { Secrets } from './secrets.js';
import { childWorkflows } from './steps/child.js';

/** A loopback service: `answer` says how each request is answered; requests are counted by idempotency key. */
async function itemService(answer: (path: string, body: { n: number }) => number) {
  const keys = new Map<string, number>();
  let active = 0;
  let most = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const key = String(req.headers['idempotency-key']);
      keys.set(key, (keys.get(key) ?? 0) + 1);
      active += 1;
      most = Math.max(most, active);
      const body = text ? JSON.parse(text) : null;
      setTimeout(() => {
        active -= 1;
        res.writeHead(answer(req.url!, body), { 'content-type': 'application/json' }).end(JSON.stringify(body));
      }, 5);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    keys,
    most: () => most,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The executions service as workflowService assembles it, with the `workflow` step's children given. */
function assemble(engine: Engine) {
  const secrets = new Secrets(engine.store, engine.journal, randomBytes(32));
  const definitions = new Definitions(engine.store, engine.journal, async () => []);
  const cancels = cancelReasons(engine, engine.store);
  const interpreter = storedWorkflow({
    workflows: childWorkflows(definitions, (name) => engine.runtime.registered(name)),
    cancellation: (id) => cancels.get(id),
    secrets,
    allow: ['127.0.0.1'],
    log: () => {},
    callbackUrl: () => 'http://runledger.test/callback',
  });
  engine.register(interpreter);
  return { definitions, executions: new Executions(engine, engine.store, definitions, interpreter, cancels) };
}

const once = { max_attempts: 1, backoff_seconds: 0.01, backoff_rate: 1 };

/** Items `fail` answer 400: each item posts itself, and the map tolerates `tolerated` failures. */
function mapOver(url: string, tolerated: number) {
  return {
    name: 'documents',
    states: { names: ['DONE', 'SOME_FAILED'], success: 'DONE', partial: 'SOME_FAILED' },
    steps: [
      {
        id: 'each',
        type: 'map',
        config: {
          items: '{{trigger.documents}}',
          concurrency: 5,
          tolerated_failures: tolerated,
          steps: [
            {
              id: 'send',
              type: 'http_request',
              retry: once,
              config: { method: 'POST', url: `${url}/items`, body: '{{item}}' },
            },
            {
              id: 'note',
              type: 'transform',
              config: { mapping: { n: '{{steps.send.output.body.n}}', at: '{{index}}' } },
            },
          ],
        },
      },
      { id: 'after', type: 'transform', config: { mapping: { count: '{{steps.each.output | length}}' } } },
    ],
  };
}

const documents = Array.from({ length: 100 }, (_, n) => ({ n }));

describe.each(backends)('stored steps sleep, wait_for_event, map, workflow on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  let service: ReturnType<typeof assemble>;
  const closers: (() => void)[] = [];
  let saved = 0;

  const save = async (definition: { name: string; [key: string]: unknown }) =>
    (await service.definitions.create({ ...definition, name: `${definition.name}-${++saved}` })).id;
  const finished = (wid: string, eid: string) =>
    eventually(async () => {
      const r = await service.executions.get(wid, eid);
      return ['success', 'partial_success', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
    }, 30_000);
  const run = async (definition: { name: string; [key: string]: unknown }, trigger: Record<string, unknown> = {}) => {
    const wid = await save(definition);
    const { execution_id } = await service.executions.execute(wid, { trigger_data: trigger });
    return { wid, eid: execution_id };
  };

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 50 });
    engine = t.engine;
    close = t.close;
    service = assemble(engine);
  });
  afterEach(async () => {
    for (const c of closers.splice(0)) c();
    await close();
  });

  it('sleeps for a duration, and until a time from a template', async () => {
    const at = new Date(Date.now() + 300).toISOString();
    const { wid, eid } = await run(
      {
        name: 'sleepy',
        steps: [
          { id: 'nap', type: 'sleep', config: { duration: '200ms' } },
          { id: 'wake', type: 'sleep', config: { until: '{{trigger.at}}' } },
        ],
      },
      { at },
    );
    const done = await finished(wid, eid);
    expect(done.status).toBe('success');
    expect(done.steps.map((s) => [s.step_id, s.status, s.output])).toEqual([
      ['nap', 'success', { duration_ms: 200 }],
      ['wake', 'success', { until: at }],
    ]);
    expect(Date.parse(done.finished_at!)).toBeGreaterThanOrEqual(Date.parse(at));
  });

  it('fails a sleep whose template renders to no time, naming the field', async () => {
    const { wid, eid } = await run(
      { name: 'bad-sleep', steps: [{ id: 'wake', type: 'sleep', config: { until: '{{trigger.at}}' } }] },
      { at: 'soon' },
    );
    const done = await finished(wid, eid);
    expect(done.status).toBe('failed');
    expect(done.steps[0]!.error).toMatch(/config\.until must be an ISO 8601 time .*"soon"/);
  });

  it('waits for an event and outputs its payload; at the timeout, null or (on_timeout: fail) a failure', async () => {
    const { wid, eid } = await run(
      {
        name: 'payment',
        steps: [
          {
            id: 'paid',
            type: 'wait_for_event',
            config: { event: 'payment.received', match: 'data.order_id == {{trigger.order_id}}', timeout: '1h' },
          },
          { id: 'late', type: 'wait_for_event', config: { event: 'refund.requested', timeout: '100ms' } },
        ],
      },
      { order_id: 42 },
    );
    await eventually(async () => (await engine.runtime.view(eid)).status === 'waiting');
    await engine.runtime.signal(eid, 'payment.received', { order_id: 42, amount: 10 });
    const done = await finished(wid, eid);
    expect(done.status).toBe('success');
    expect(done.steps.map((s) => [s.step_id, s.output])).toEqual([
      ['paid', { order_id: 42, amount: 10 }],
      ['late', null],
    ]);

    const failing = await run({
      name: 'strict',
      steps: [
        { id: 'paid', type: 'wait_for_event', config: { event: 'payment.received', timeout: 100, on_timeout: 'fail' } },
      ],
    });
    const failed = await finished(failing.wid, failing.eid);
    expect(failed.status).toBe('failed');
    expect(failed.steps[0]).toMatchObject({ status: 'timed_out' });
    expect(failed.steps[0]!.error).toMatch(/wait_for_event paid: no payment.received event within 100/);
  });

  it('maps 100 items 5 at a time: 3 failed of 3 tolerated end partial_success, results in order', async () => {
    const fails = new Set([7, 42, 99]);
    const items = await itemService((_path, body) => (fails.has(body.n) ? 400 : 200));
    closers.push(items.close);
    const { wid, eid } = await run(mapOver(items.url, 3), { documents });
    const done = await finished(wid, eid);
    expect(done.status).toBe('partial_success');
    expect(done.state).toBe('SOME_FAILED');
    const [each, after] = done.steps;
    const results = each!.output as unknown[];
    expect(results).toHaveLength(100);
    results.forEach((r, i) => {
      if (fails.has(i))
        expect(r).toMatchObject({ status: 'failed', step: 'send', error: expect.stringMatching(/400/) });
      else expect(r).toEqual({ status: 'success', output: { n: i, at: i } });
    });
    // the steps after a tolerated failure run
    expect(after).toMatchObject({ status: 'success', output: { count: 100 } });
    expect(items.keys.size).toBe(100);
    expect([...items.keys.values()].every((n) => n === 1)).toBe(true);
    expect(items.most()).toBeLessThanOrEqual(5);
  });

  it('reruns from the step after a map without running the map again', async () => {
    const items = await itemService((_path, body) => (body.n === 5 ? 400 : 200));
    closers.push(items.close);
    const base = mapOver(items.url, 1);
    const last = { id: 'last', type: 'transform', config: { mapping: { x: '{{trigger.missing}}' } } };
    const definition = { ...base, steps: [...base.steps, last] };
    const { wid, eid } = await run(definition, { documents: documents.slice(0, 10) });
    expect((await finished(wid, eid)).status).toBe('failed');
    const rerun = await service.executions.rerun(wid, eid, { from_step: 'last', trigger_data: { missing: 1 } });
    const done = await finished(wid, rerun.execution_id);
    // its items partly failed in the first execution: the rerun that reuses them ends as partly done
    expect(done.status).toBe('partial_success');
    expect((done.steps[0]!.output as unknown[]).length).toBe(10);
    expect(items.keys.size).toBe(10);
  });

  it('fails the map when more items fail than tolerated', async () => {
    const fails = new Set([1, 2, 3, 4]);
    const items = await itemService((_path, body) => (fails.has(body.n) ? 400 : 200));
    closers.push(items.close);
    const { wid, eid } = await run(mapOver(items.url, 3), { documents });
    const done = await finished(wid, eid);
    expect(done.status).toBe('failed');
    expect(done.steps[0]).toMatchObject({ step_id: 'each', status: 'failed' });
    expect(done.steps[0]!.error).toMatch(/4 of 100 items failed \(3 tolerated\); item 1: /);
    expect(done.steps[1]!.status).toBe('skipped');
  });

  it('fails a map over something that is not a list, and over more than 1,000 items', async () => {
    const items = await itemService(() => 200);
    closers.push(items.close);
    const notList = await run(mapOver(items.url, 0), { documents: 'a, b' });
    expect((await finished(notList.wid, notList.eid)).steps[0]!.error).toMatch(/config\.items must be a list/);
    const many = await run(mapOver(items.url, 0), { documents: Array.from({ length: 1001 }, (_, n) => ({ n })) });
    expect((await finished(many.wid, many.eid)).steps[0]!.error).toMatch(/1001 items: a map runs at most 1000/);
    expect(items.keys.size).toBe(0);
  });

  it('starts a stored workflow and a code workflow as children: the output is theirs, a failure is the step’s', async () => {
    const double = workflow('double', { version: '1' }, async (ctx, input: { n: number }) =>
      ctx.step('twice', async () => ({ doubled: input.n * 2 })),
    );
    const boom = workflow('boom', { version: '1' }, async (ctx) =>
      ctx.step('fail', async () => Promise.reject(new ValidationError('n', 'too big')), { retry: { maxAttempts: 1 } }),
    );
    engine.register(double, boom);
    const child = await save({
      name: 'greet',
      steps: [{ id: 'hello', type: 'transform', config: { mapping: { greeting: 'hi {{trigger.who}}' } } }],
    });
    const { wid, eid } = await run(
      {
        name: 'parent',
        steps: [
          { id: 'stored', type: 'workflow', config: { workflow: child, input: { who: '{{trigger.who}}' } } },
          { id: 'code', type: 'workflow', config: { workflow: 'code:double', input: { n: 21 } } },
        ],
      },
      { who: 'Ada' },
    );
    const done = await finished(wid, eid);
    expect(done.status).toBe('success');
    expect(done.steps.find((s) => s.step_id === 'stored')!.output).toEqual({ hello: { greeting: 'hi Ada' } });
    expect(done.steps.find((s) => s.step_id === 'code')!.output).toEqual({ doubled: 42 });
    // the stored child is an execution of its workflow, with its own record
    const childRecord = await service.executions.get(child, `${eid}:stored`);
    expect(childRecord).toMatchObject({ status: 'success', trigger_type: 'workflow', trigger_data: { who: 'Ada' } });

    const failing = await run({
      name: 'parent-fails',
      steps: [{ id: 'code', type: 'workflow', config: { workflow: 'code:boom' } }],
    });
    const failed = await finished(failing.wid, failing.eid);
    expect(failed.status).toBe('failed');
    expect(failed.steps.find((s) => s.step_id === 'code')!.error).toMatch(/child run .*:code failed: .*too big/);

    const missing = await run({
      name: 'parent-missing',
      steps: [{ id: 'code', type: 'workflow', config: { workflow: 'code:nowhere' } }],
    });
    const none = await finished(missing.wid, missing.eid);
    expect(none.status).toBe('failed');
    expect(none.steps[0]!.error).toMatch(/no code workflow 'nowhere'/);
  });
});
