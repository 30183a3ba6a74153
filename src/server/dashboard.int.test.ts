import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import type { WorkflowService } from '../workflows/service.js';
import { storedWorkflows } from '../app/workflows.js';
import { sessions } from '../agents/service.js';
import { offlineModel } from '../models/offline.js';
import { createApp } from './app.js';
import { assemble } from '../app/assemble.js';

const waiter = workflow('waiter', async (ctx) => {
  await ctx.step('before', async () => 1);
  const got = await ctx.waitForEvent<{ ok: boolean }>('go');
  return { got };
});

const quick = workflow('quick', async (ctx, input: { n: number }) => ctx.step('add', async () => input.n + 1));

/** A stand-in for `vite build`'s output: an index page and one hashed asset. */
function builtUi(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rl-ui-dist-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><title>runledger</title><div id="app"></div>');
  writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
  return dir;
}

describe.each(backends)('the dashboard’s endpoints on $name', (backend) => {
  let engine: Engine;
  let close: () => Promise<void>;
  let service: WorkflowService;
  let app: Hono;
  const token = 'dash-token';
  const call = async (method: string, path: string, body?: unknown, auth = true) => {
    const res = await app.fetch(
      new Request(`http://local${path}`, {
        method,
        headers: {
          ...(auth ? { authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
    );
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      text,
      body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : null,
    };
  };

  beforeEach(async () => {
    ({ engine, close } = await testEngine(backend, { workflows: [waiter, quick] }));
    service = storedWorkflows(engine, { secretKey: randomBytes(32) });
    app = createApp({ engine, workflows: service, token, uiDir: builtUi() });
  });
  afterEach(() => close());

  it('serves the dashboard without the token: hashed assets cached for good, the page revalidated, any /ui path the page', async () => {
    const page = await call('GET', '/ui/', undefined, false);
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.text).toContain('<div id="app">');
    const deep = await call('GET', '/ui/runs/ex_01ABC', undefined, false);
    expect([deep.status, deep.headers.get('content-type'), deep.text]).toEqual([
      200,
      'text/html; charset=utf-8',
      page.text,
    ]);
    const asset = await call('GET', '/ui/assets/index-abc123.js', undefined, false);
    expect([asset.status, asset.headers.get('cache-control'), asset.headers.get('content-type')]).toEqual([
      200,
      'public, max-age=31536000, immutable',
      'text/javascript; charset=utf-8',
    ]);
    expect((await call('GET', '/ui/assets/index-gone.js', undefined, false)).status).toBe(404);
    expect((await call('GET', '/ui/../package.json', undefined, false)).text).not.toContain('"name"');
    expect((await call('GET', '/ui/%2e%2e/%2e%2e/package.json', undefined, false)).text).not.toContain('"name"');
    expect((await call('GET', '/ui/%E0%A4%A.js', undefined, false)).status).toBe(404);
    // the data still needs the token
    expect((await call('GET', '/runs', undefined, false)).status).toBe(401);
    expect((await call('GET', '/runs')).status).toBe(200);
  });

  it('reads one run of any kind, signals it and cancels it', async () => {
    const run = await engine.start(waiter, {});
    await eventually(async () => (await call('GET', `/runs/${run.id}`)).body?.status === 'waiting');
    const got = await call('GET', `/runs/${run.id}`);
    expect(got.body).toMatchObject({ id: run.id, workflow: 'waiter', kind: 'code', steps: [{ name: 'before' }] });
    expect((await call('POST', `/runs/${run.id}/signal`, { name: 'go', payload: { ok: true } })).status).toBe(202);
    expect(await run.result({ pollMs: 50 })).toEqual({ got: { ok: true } });
    expect((await call('POST', `/runs/${run.id}/cancel`)).status).toBe(409);
    expect((await call('POST', `/runs/${run.id}/signal`, { name: '' })).status).toBe(400);
    expect((await call('GET', '/runs/run_nope')).status).toBe(404);

    const held = await engine.start(waiter, {});
    await eventually(async () => (await call('GET', `/runs/${held.id}`)).body?.status === 'waiting');
    expect((await call('POST', `/runs/${held.id}/cancel`)).status).toBe(202);
    await eventually(async () => (await call('GET', `/runs/${held.id}`)).body?.status === 'cancelled');
  });

  it('lists runs of every kind newest first by start time, filtered in the database, with full pages', async () => {
    const wf = await service.definitions.create({
      name: 'shout',
      steps: [{ id: 'up', type: 'transform', config: { template: 'x', output_key: 'x' } }],
    });
    const order: string[] = [];
    // ids of different kinds do not sort by time together (ex_… < run_…): interleave them
    for (let i = 0; i < 3; i++) {
      order.push((await engine.start(quick, { n: i })).id);
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push((await service.executions.execute(wf.id)).execution_id);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await eventually(
      async () =>
        (await call('GET', '/runs?order=created&limit=100')).body.runs.every(
          (r: { status: string }) => r.status === 'success',
        ),
      15_000,
    );
    const pages = async (query: string) => {
      const ids: string[] = [];
      let last: string | null = null;
      do {
        const page: { status: number; body: any } = await call(
          'GET',
          `/runs?order=created&${query}${last ? `&last_key=${encodeURIComponent(last)}` : ''}`,
        );
        expect(page.status, JSON.stringify(page.body)).toBe(200);
        if (page.body.last_key !== null) expect(page.body.count).toBe(Number(/limit=(\d+)/.exec(query)?.[1] ?? 20));
        ids.push(...page.body.runs.map((r: { id: string }) => r.id));
        last = page.body.last_key;
      } while (last !== null);
      return ids;
    };
    expect(await pages('limit=4')).toEqual([...order].reverse());
    expect(await pages('limit=2&kind=execution')).toEqual(order.filter((id) => id.startsWith('ex_')).reverse());
    expect(await pages('limit=2&kind=code')).toEqual(order.filter((id) => !id.startsWith('ex_')).reverse());
    expect(await pages(`limit=1&workflow=${wf.id}`)).toEqual(order.filter((id) => id.startsWith('ex_')).reverse());
    expect(await pages('limit=1&workflow=quick&status=succeeded')).toEqual(
      order.filter((id) => !id.startsWith('ex_')).reverse(),
    );
    expect(await pages('limit=5&status=failed')).toEqual([]);
    const third = (await call('GET', `/runs/${order[2]}`)).body.created_at;
    expect(await pages(`limit=10&created_after=${encodeURIComponent(third)}`)).toEqual(order.slice(3).reverse());
    expect((await call('GET', '/runs?order=created&last_key=nonsense')).status).toBe(400);
    expect((await call('GET', '/runs?order=sideways')).status).toBe(400);
  });

  it('declares each route once, with every service mounted (its OpenAPI document lists each method and path once)', async () => {
    const own = await testEngine(backend, { workflows: [quick] });
    const services = await assemble(own.engine, {
      secretKey: randomBytes(32),
      allow: [],
      logger: pino({ level: 'silent' }),
      chatModel: offlineModel(),
      workers: false,
    });
    try {
      const full = createApp({ engine: own.engine, ...services, uiDir: null });
      const doc = await (await full.fetch(new Request('http://local/openapi.json'))).json();
      const declared = Object.entries(doc.paths as Record<string, Record<string, { summary: string }>>).flatMap(
        ([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
      );
      expect(new Set(declared).size).toBe(declared.length);
      expect(declared).toEqual(
        expect.arrayContaining([
          'GET /runs/{id}',
          'POST /runs',
          'POST /runs/{id}/cancel',
          'POST /runs/{id}/signal',
          'GET /agent/approvals',
          'GET /tasks/{id}/history',
          'GET /workflows/{id}/versions',
        ]),
      );
      // the routes the tests and the dashboard use: a signal to a run that has ended is refused
      const run = await own.engine.start(quick, { n: 1 });
      await run.result({ pollMs: 50 });
      const signal = await full.fetch(
        new Request(`http://local/runs/${run.id}/signal`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'go' }),
        }),
      );
      expect(signal.status).toBe(409);
    } finally {
      await services.stop();
      await own.close();
    }
  });

  it('lists the runs of an agent by its name, and names the agent of each session', async () => {
    const agents = sessions(engine, engine.store, { agents: [] });
    const session = await agents.create({ agent: 'sample-agent', input: {} });
    // a code run whose input happens to say agent: it is not a run of the agent
    const lookalike = await engine.start(quick, { n: 1, agent: 'sample-agent' } as { n: number });
    const wf = await service.definitions.create({
      name: 'sample-agent',
      steps: [{ id: 'a', type: 'log', config: { message: 'hi' } }],
    });
    const execution = await service.executions.execute(wf.id);
    await eventually(async () => (await call('GET', `/runs/${lookalike.id}`)).status === 200);
    for (const order of ['created', 'id']) {
      // the name is the agent's and the stored workflow's: a name works wherever an id does
      const byAgent = (await call('GET', `/runs?order=${order}&workflow=sample-agent&limit=100`)).body.runs;
      expect(
        byAgent.map((r: { id: string; agent: string | null; kind: string }) => `${r.id} ${r.agent} ${r.kind}`).sort(),
      ).toEqual([`${session.session_id} sample-agent session`, `${execution.execution_id} null execution`].sort());
      const byWorkflow = (await call('GET', `/runs?order=${order}&workflow=${wf.id}&limit=100`)).body.runs;
      expect(byWorkflow.map((r: { id: string }) => r.id)).toEqual([execution.execution_id]);
    }
    expect((await call('GET', `/runs/${lookalike.id}`)).body.agent).toBeNull();
  });

  it("gives a dead task's history", async () => {
    const { task } = await engine.queue.enqueue('mail', { to: 'x' }, { maxAttempts: 1 });
    engine.work('mail', async () => {
      throw new Error('no route to host');
    });
    await eventually(async () => (await engine.store.taskGet({ id: task.id })).state === 'dead');
    const history = await call('GET', `/tasks/${task.id}/history`);
    expect(history.body.events.map((e: { type: string }) => e.type)).toEqual(['task.enqueued', 'task.dead']);
    expect(history.body.events[1].data.error).toContain('no route to host');
    expect((await call('GET', '/tasks/task_nope/history')).status).toBe(404);
  });

  it('gives an overview and a workflow’s versions', async () => {
    const wf = await service.definitions.create({
      name: 'v',
      steps: [{ id: 'a', type: 'log', config: { message: 'one' } }],
    });
    await service.definitions.update(wf.id, {
      name: 'v',
      steps: [{ id: 'a', type: 'log', config: { message: 'two' } }],
    });
    const versions = await call('GET', `/workflows/${wf.id}/versions`);
    expect(
      versions.body.versions.map(
        (v: { version: number; definition: { steps: Array<{ config: { message: string } }> } }) => [
          v.version,
          v.definition.steps[0]!.config.message,
        ],
      ),
    ).toEqual([
      [1, 'one'],
      [2, 'two'],
    ]);
    expect((await call('GET', '/workflows/wf_nope/versions')).status).toBe(404);

    await (await engine.start(quick, { n: 1 })).result({ pollMs: 50 });
    const held = await engine.start(waiter, {});
    await eventually(async () => (await call('GET', `/runs/${held.id}`)).body?.status === 'waiting');
    const overview = await call('GET', '/overview?window=15m');
    expect(overview.status).toBe(200);
    expect(overview.body.runs_ended).toHaveLength(60);
    expect(
      overview.body.runs_ended.reduce(
        (n: number, b: { by_status: Record<string, number> }) => n + (b.by_status.success ?? 0),
        0,
      ),
    ).toBe(1);
    expect(overview.body.runs_in_flight).toEqual({ waiting: 1 });
    expect(overview.body.step_latency.count).toBe(2);
    expect(overview.body.step_latency.p99_ms).toBeGreaterThanOrEqual(overview.body.step_latency.p50_ms);
    expect(overview.body.queue).toHaveProperty('ready');
    expect(overview.body.parked).toMatchObject({ now: 0 });
    expect((await call('GET', '/overview?window=30d')).status).toBe(400);
    await engine.cancel(held.id);
  });
});
