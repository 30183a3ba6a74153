import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { main } from '../cli/main.js';
import { output } from '../cli/output.js';
import { mount } from '../server/app.js';
import { listen } from '../server/listen.js';
import { controlRoutes } from '../server/routes/control.js';
import { workflowRoutes } from '../server/routes/workflows.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const hello = workflow('hello', async (ctx, input: { user: string }) => ctx.step('greet', async () => input.user));

describe.each(backends)('flow control over HTTP on %s', (backend) => {
  let engine: Engine;
  let app: Hono;
  let close: () => Promise<void>;
  let server: Server;
  let url: string;
  /** The requests the held endpoint has not answered yet, in arrival order. */
  let held: ServerResponse[];
  let inFlight: number;
  let most: number;

  beforeEach(async () => {
    held = [];
    inFlight = 0;
    most = 0;
    server = createServer((_req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      res.on('finish', () => inFlight--);
      held.push(res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hold`;
    const t = await testEngine(backend, { workflows: [hello], pollMs: 50 });
    engine = t.engine;
    const service = storedWorkflows(engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    app = mount(new Hono(), [...controlRoutes(engine), ...workflowRoutes(service)]);
    close = async () => {
      server.closeAllConnections();
      server.close();
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
  const status = (wf: string, ex: string) =>
    call('GET', `/workflows/${wf}/executions/${ex}`).then((r) => r.body.status as string);
  const answer = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}');

  it("runs a stored workflow's executions one at a time under concurrency [{ limit: 1 }]", async () => {
    const created = await call('POST', '/workflows', {
      name: 'one-at-a-time',
      concurrency: [{ limit: 1 }],
      steps: [{ id: 'call', type: 'http_request', config: { url, method: 'POST' } }],
    });
    expect(created.status).toBe(201);
    expect(created.body.concurrency).toEqual([{ limit: 1 }]);
    const wf = created.body.id as string;
    const first = (await call('POST', `/workflows/${wf}/execute`, {})).body.execution_id as string;
    const second = (await call('POST', `/workflows/${wf}/execute`, {})).body.execution_id as string;
    await eventually(() => held.length === 1);
    // the second is held back with its reason while the first holds the slot
    const waiting = await eventually(async () => {
      const view = await engine.runs.find(second);
      return view?.status === 'waiting' && view;
    });
    expect(waiting.waitingFor).toMatch(/concurrency/);
    answer(held.shift()!);
    await eventually(async () => (await status(wf, first)) === 'success');
    await eventually(() => held.length === 1);
    answer(held.shift()!);
    await eventually(async () => (await status(wf, second)) === 'success');
    expect(most).toBe(1);
  });

  it("keys a stored workflow's limit by its trigger data and refuses trigger data without the key", async () => {
    const created = await call('POST', '/workflows', {
      name: 'per-user',
      concurrency: [{ key: 'trigger.user', limit: 1 }],
      steps: [{ id: 'call', type: 'http_request', config: { url, method: 'POST' } }],
    });
    const wf = created.body.id as string;
    const refused = await call('POST', `/workflows/${wf}/execute`, { trigger_data: { other: 1 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.problems[0].path).toBe('concurrency[0].key');
    for (const user of ['ada', 'bob']) await call('POST', `/workflows/${wf}/execute`, { trigger_data: { user } });
    // two users, two slots: both requests are in flight at once
    await eventually(() => held.length === 2);
    for (const res of held.splice(0)) answer(res);
  });

  it('gives the execute request’s priority, over the definition’s, to the run', async () => {
    const created = await call('POST', '/workflows', {
      name: 'urgent',
      priority: 5,
      steps: [{ id: 'say', type: 'log', config: { message: 'hi' } }],
    });
    const wf = created.body.id as string;
    const plain = (await call('POST', `/workflows/${wf}/execute`, {})).body.execution_id as string;
    const urgent = (await call('POST', `/workflows/${wf}/execute`, { priority: 42 })).body.execution_id as string;
    expect((await engine.runs.find(plain))?.priority).toBe(5);
    expect((await engine.runs.find(urgent))?.priority).toBe(42);
    const bad = await call('POST', `/workflows/${wf}/execute`, { priority: 101 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('priority');
  });

  it("lists a debounced workflow's executions (its windows' runs) page by page", async () => {
    const created = await call('POST', '/workflows', {
      name: 'debounced',
      debounce: { key: 'trigger.chat', period: '1s' },
      steps: [{ id: 'say', type: 'log', config: { message: 'hi' } }],
    });
    const wf = created.body.id as string;
    const ids = new Set<string>();
    for (const chat of ['a', 'a', 'b'])
      ids.add((await call('POST', `/workflows/${wf}/execute`, { trigger_data: { chat } })).body.execution_id);
    expect(ids.size).toBe(2);
    const first = await call('GET', `/workflows/${wf}/executions?limit=1`);
    expect(first.body.last_key).toMatch(/^run_/);
    const second = await call('GET', `/workflows/${wf}/executions?limit=1&last_key=${first.body.last_key}`);
    expect(second.status).toBe(200);
    const listed = [...first.body.executions, ...second.body.executions].map((e) => e.execution_id);
    expect(new Set(listed)).toEqual(ids);
  });

  it('refuses a bad flow field of a definition at save time, naming it', async () => {
    const bad = await call('POST', '/workflows', {
      name: 'bad',
      concurrency: [{ limit: 1 }, { key: 'trigger.user', limit: 0, fair_by: 'trigger.tenant' }],
      steps: [{ id: 'say', type: 'log', config: { message: 'hi' } }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems.map((p: { path: string }) => p.path)).toEqual(['concurrency[1].limit']);
  });

  it('starts a code run with flow fields over POST /runs, naming a bad one', async () => {
    const started = await call('POST', '/runs', {
      workflow: 'hello',
      input: { user: 'ada' },
      priority: 3,
      concurrency: [{ key: 'input.user', limit: 2, on_limit: 'queue' }],
    });
    expect(started.status).toBe(202);
    expect((await engine.runs.find(started.body.run_id))?.priority).toBe(3);
    const bad = await call('POST', '/runs', {
      workflow: 'hello',
      input: { user: 'ada' },
      debounce: { key: 'input.user', period: '2s', max_wait: '1s' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('debounce.max_wait');
    const missing = await call('POST', '/runs', {
      workflow: 'hello',
      input: { name: 'ada' },
      concurrency: [{ key: 'input.user', limit: 1 }],
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.problems[0].path).toBe('concurrency[0].key');
  });

  it('takes --priority and --concurrency-limit on runledger start, for stored and code workflows', async () => {
    const served = await listen(app, { host: '127.0.0.1', port: 0 });
    const cli = async (...args: string[]) => {
      let printed = '';
      await main(
        ['node', 'runledger', ...args, '--url', served.url, '--json'],
        output((t) => (printed += t), false),
      );
      return JSON.parse(printed);
    };
    try {
      await call('POST', '/workflows', {
        name: 'cli-urgent',
        steps: [{ id: 's', type: 'log', config: { message: 'x' } }],
      });
      const execution = await cli('start', 'cli-urgent', '--priority', '-7');
      expect((await engine.runs.find(execution.execution_id))?.priority).toBe(-7);
      const run = await cli('start', 'hello', '--input', '{"user":"ada"}', '--priority', '9');
      expect((await engine.runs.find(run.run_id))?.priority).toBe(9);
      const limited = await cli(
        'start',
        'hello',
        '--input',
        '{"user":"ada"}',
        '--concurrency-key',
        'input.user',
        '--concurrency-limit',
        '1',
      );
      await eventually(async () => (await engine.runs.find(limited.run_id))?.status === 'success');
      await expect(cli('start', 'hello', '--priority', 'high')).rejects.toThrow(/--priority: must be a whole number/);
    } finally {
      await served.close();
    }
  });
});
