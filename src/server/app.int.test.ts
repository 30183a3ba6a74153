import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { TerminalError } from '../errors.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from './app.js';

const greet = {
  name: 'greet',
  steps: [
    { id: 'hello', type: 'transform', config: { template: 'Hello {{trigger.name | upper}}!', output_key: 'greeting' } },
    {
      id: 'shape',
      type: 'transform',
      config: {
        mapping: {
          greeting: '{{steps.hello.output.greeting}}',
          count: '{{trigger.items | length}}',
          first: '{{trigger.items[0]}}',
        },
      },
    },
    { id: 'note', type: 'log', config: { message: 'done {{trigger.id | default("n/a")}}', level: 'info' } },
  ],
};

/** The smallest workflow: a workflow needs at least one step. */
const ONE_STEP = { id: 'note', type: 'log', config: { message: 'hi' } };

describe.each(backends)('HTTP API on $name', (backend) => {
  let app: Hono;
  let engine: Engine;
  let close: () => Promise<void>;
  let logged: unknown[];
  let slow: Server;
  let slowUrl: string;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
    if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const finished = (wid: string, eid: string) =>
    eventually(async () => {
      const { body } = await call('GET', `/workflows/${wid}/executions/${eid}`);
      return ['success', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    });

  beforeEach(async () => {
    slow = createServer((_req, res) => void setTimeout(() => res.end('{}'), 5_000).unref());
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/slow`;
    const t = await testEngine(backend, { pollMs: 100 });
    logged = [];
    engine = t.engine;
    const workflows = storedWorkflows(t.engine, {
      secretKey: randomBytes(32),
      allow: ['127.0.0.1'],
      log: (line) => logged.push(line),
    });
    app = createApp({ engine: t.engine, workflows });
    close = async () => {
      slow.closeAllConnections();
      slow.close();
      await t.close();
    };
  });
  afterEach(() => close());

  it('marks every answer nosniff, errors included: a JSON body quoting input is never read as HTML', async () => {
    for (const [method, path] of [
      ['GET', '/workflows'],
      ['GET', '/nowhere'],
      ['POST', '/workflows'],
    ] as const) {
      const res = await app.fetch(
        new Request(`http://api${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(method === 'POST' ? { body: '{"name":"<script>"}' } : {}),
        }),
      );
      expect([method, path, res.headers.get('x-content-type-options')]).toEqual([method, path, 'nosniff']);
    }
  });

  it('stores, lists, versions and deletes workflows', async () => {
    const created = await call('POST', '/workflows', greet);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^wf_/), version: 1, name: 'greet', enabled: true });
    expect(created.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    const id = created.body.id;
    expect((await call('GET', `/workflows/${id}`)).body.steps).toHaveLength(3);
    const updated = await call('PUT', `/workflows/${id}`, { ...greet, steps: greet.steps.slice(0, 1) });
    expect(updated.body).toMatchObject({ id, version: 2 });
    expect((await call('GET', '/workflows')).body).toMatchObject({
      count: 1,
      last_key: null,
      workflows: [{ id, version: 2 }],
    });
    expect((await call('DELETE', `/workflows/${id}`)).status).toBe(204);
    expect((await call('GET', `/workflows/${id}`)).status).toBe(404);
    expect((await call('GET', '/workflows/wf_nope')).body.error.code).toBe('not_found');
  });

  it('answers a bad definition with 400 listing every problem by JSON path, and stores nothing', async () => {
    const bad = {
      name: 'bad',
      steps: [
        { id: 'a', type: 'http_request', config: { method: 'POST' } },
        { id: 'b', type: 'teleport', config: {} },
        { id: 'c', type: 'log', config: { message: 'x' } },
      ],
    };
    const first = await call('POST', '/workflows', bad);
    expect(first.status).toBe(400);
    expect(first.body.error.problems).toEqual(
      expect.arrayContaining([
        { path: 'steps[0].config.url', message: 'required' },
        expect.objectContaining({ path: 'steps[1].type' }),
      ]),
    );
    const references = await call('POST', '/workflows', {
      name: 'refs',
      steps: [
        { id: 'a', type: 'log', config: { message: '{{steps.b.output.x}}' } },
        { id: 'b', type: 'log', config: { message: 'x' } },
        { id: 'b', type: 'log', config: { message: '{{7*7}}' } },
      ],
    });
    expect(references.status).toBe(400);
    const paths = references.body.error.problems.map(
      (p: { path: string; message: string }) => `${p.path}: ${p.message}`,
    );
    expect(paths.join('\n')).toMatch(/steps\[0\]\.config: refers to steps\.b, which runs later/);
    expect(paths.join('\n')).toMatch(/steps\[2\]\.id: duplicates the id of steps\[1\]/);
    expect(paths.join('\n')).toMatch(/steps\[2\]\.config\.message/);
    expect((await call('GET', '/workflows')).body.count).toBe(0);
  });

  it('executes a workflow: 202 at once, then every step with its status, input and output', async () => {
    const { body: wf } = await call('POST', '/workflows', greet);
    const started = await call('POST', `/workflows/${wf.id}/execute`, {
      trigger_data: { name: 'ada', items: ['x', 'y'], id: 7 },
    });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({
      execution_id: expect.stringMatching(/^ex_/),
      workflow_id: wf.id,
      workflow_version: 1,
      status: 'pending',
      duplicate: false,
    });
    const record = await finished(wf.id, started.body.execution_id);
    expect(record).toMatchObject({
      status: 'success',
      trigger_type: 'manual',
      trigger_data: { name: 'ada', items: ['x', 'y'], id: 7 },
      error: null,
      workflow_version: 1,
    });
    expect(record.steps.map((s: { status: string }) => s.status)).toEqual(['success', 'success', 'success']);
    expect(record.steps[0]).toMatchObject({
      step_id: 'hello',
      input: { template: 'Hello ADA!', output_key: 'greeting' },
      output: { greeting: 'Hello ADA!' },
    });
    expect(record.steps[1].output).toEqual({ greeting: 'Hello ADA!', count: 2, first: 'x' });
    expect(record.steps[2].output).toEqual({ message: 'done 7', level: 'info' });
    expect(record.steps[0].duration_ms).toBeGreaterThanOrEqual(0);
    expect(logged).toEqual([
      {
        level: 'info',
        message: 'done 7',
        execution_id: started.body.execution_id,
        workflow_id: wf.id,
        step_id: 'note',
      },
    ]);
  });

  it('keeps a running execution on the version it started with when the workflow is updated', async () => {
    const v1 = {
      name: 'versioned',
      steps: [
        {
          id: 'wait',
          type: 'http_request',
          retry: { max_attempts: 1 },
          config: { url: slowUrl, timeout_seconds: 0.5 },
        },
        { id: 'after', type: 'log', config: { message: 'v1' } },
      ],
    };
    const { body: wf } = await call('POST', '/workflows', v1);
    const { body: started } = await call('POST', `/workflows/${wf.id}/execute`, {});
    await eventually(
      async () =>
        (await call('GET', `/workflows/${wf.id}/executions/${started.execution_id}`)).body.steps[0].status ===
        'running',
    );
    expect(
      (
        await call('PUT', `/workflows/${wf.id}`, {
          name: 'versioned',
          steps: [{ id: 'only', type: 'log', config: { message: 'v2' } }],
        })
      ).body.version,
    ).toBe(2);
    const record = await finished(wf.id, started.execution_id);
    expect(record).toMatchObject({ workflow_version: 1, status: 'failed' });
    expect(record.steps.map((s: { step_id: string; status: string }) => `${s.step_id} ${s.status}`)).toEqual([
      'wait failed',
      'after skipped',
    ]);
    expect(record.steps[0].error).toMatch(/timed out/);
    const { body: next } = await call('POST', `/workflows/${wf.id}/execute`, {});
    expect(await finished(wf.id, next.execution_id)).toMatchObject({
      workflow_version: 2,
      status: 'success',
      steps: [{ step_id: 'only', output: { message: 'v2', level: 'info' } }],
    });
  });

  it('returns the same execution for a repeated Idempotency-Key, even when requests race', async () => {
    const { body: wf } = await call('POST', '/workflows', greet);
    const headers = { 'idempotency-key': 'order-42' };
    const racing = await Promise.all(
      [1, 2, 3].map(() =>
        call('POST', `/workflows/${wf.id}/execute`, { trigger_data: { name: 'x', items: [] } }, headers),
      ),
    );
    expect(new Set(racing.map((r) => r.body.execution_id)).size).toBe(1);
    const other = await call('POST', `/workflows/${wf.id}/execute`, { trigger_data: { name: 'x', items: [] } });
    expect(other.body.execution_id).not.toBe(racing[0]!.body.execution_id);
    expect((await call('GET', `/workflows/${wf.id}/executions`)).body.count).toBe(2);
  });

  it('refuses a 0-step workflow at save time; runs one with {} as trigger data; refuses disabled and unknown workflows', async () => {
    const none = await call('POST', '/workflows', { name: 'empty', steps: [] });
    expect(none.status).toBe(400);
    expect(none.body.error.problems).toEqual([{ path: 'steps', message: 'needs at least one step' }]);
    const { body: one } = await call('POST', '/workflows', { name: 'one', steps: [ONE_STEP] });
    const started = await call('POST', `/workflows/${one.id}/execute`);
    expect(started.status).toBe(202);
    expect(await finished(one.id, started.body.execution_id)).toMatchObject({
      status: 'success',
      trigger_data: {},
      steps: [{ step_id: 'note', status: 'success' }],
    });
    const { body: off } = await call('POST', '/workflows', { name: 'off', enabled: false, steps: [ONE_STEP] });
    expect((await call('POST', `/workflows/${off.id}/execute`, {})).status).toBe(400);
    expect((await call('POST', '/workflows/wf_missing/execute', {})).status).toBe(404);
  });

  it('pages executions newest first with last_key', async () => {
    const { body: wf } = await call('POST', '/workflows', { name: 'one', steps: [ONE_STEP] });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await call('POST', `/workflows/${wf.id}/execute`, {})).body.execution_id);
    const first = await call('GET', `/workflows/${wf.id}/executions?limit=2`);
    expect(first.body.executions.map((e: { execution_id: string }) => e.execution_id)).toEqual([ids[2], ids[1]]);
    expect(first.body.last_key).toBe(ids[1]);
    const second = await call('GET', `/workflows/${wf.id}/executions?limit=2&last_key=${first.body.last_key}`);
    expect(second.body).toMatchObject({ count: 1, last_key: null, executions: [{ execution_id: ids[0] }] });
    expect((await call('GET', `/workflows/${wf.id}/executions?limit=0`)).body.error.problems[0].path).toBe(
      'query.limit',
    );
  });

  it('fails a step whose template names a missing path, skips the rest, and says which expression', async () => {
    const { body: wf } = await call('POST', '/workflows', {
      name: 'missing',
      steps: [
        { id: 'a', type: 'log', config: { message: 'hi {{trigger.nme}}' } },
        { id: 'b', type: 'log', config: { message: 'never' } },
      ],
    });
    const { body: started } = await call('POST', `/workflows/${wf.id}/execute`, { trigger_data: { name: 'x' } });
    const record = await finished(wf.id, started.execution_id);
    expect(record.status).toBe('failed');
    expect(record.steps[0]).toMatchObject({ status: 'failed', attempts: 1 });
    expect(record.steps[0].error).toMatch(/InterpolationError: \{\{trigger\.nme\}\}/);
    expect(record.steps[1].status).toBe('skipped');
    expect(record.error).toMatch(/trigger\.nme/);
  });

  it('cancels a running execution (202), then answers 409', async () => {
    const { body: wf } = await call('POST', '/workflows', {
      name: 'slow',
      steps: [{ id: 'wait', type: 'http_request', config: { url: slowUrl } }],
    });
    const { body: started } = await call('POST', `/workflows/${wf.id}/execute`, {});
    await eventually(
      async () =>
        (await call('GET', `/workflows/${wf.id}/executions/${started.execution_id}`)).body.steps[0].status ===
        'running',
    );
    expect((await call('POST', `/workflows/${wf.id}/executions/${started.execution_id}/cancel`)).status).toBe(202);
    expect((await finished(wf.id, started.execution_id)).status).toBe('cancelled');
    expect((await call('POST', `/workflows/${wf.id}/executions/${started.execution_id}/cancel`)).status).toBe(409);
  });

  it('masks secrets in step inputs and outputs; lists secret names only', async () => {
    expect((await call('POST', '/secrets', { name: 'api_key', value: 'sk-planted-93b1' })).status).toBe(201);
    expect((await call('POST', '/secrets', { name: 'bad name', value: 'x' })).body.error.message).toMatch(/name/);
    const listed = await call('GET', '/secrets');
    expect(listed.body.secrets.map((s: { name: string }) => s.name)).toEqual(['api_key']);
    expect(JSON.stringify(listed.body)).not.toContain('sk-planted-93b1');
    const steps = [
      { id: 'a', type: 'transform', config: { template: 'Bearer {{secrets.api_key}}', output_key: 'auth' } },
      { id: 'b', type: 'log', config: { message: 'key={{secrets.api_key}}' } },
    ];
    const { body: wf } = await call('POST', '/workflows', { name: 's', steps });
    const { body: started } = await call('POST', `/workflows/${wf.id}/execute`, {});
    const record = await finished(wf.id, started.execution_id);
    expect(record.steps[0].input.template).toBe('Bearer ***');
    expect(record.steps[0].output).toEqual({ auth: 'Bearer ***' });
    expect(JSON.stringify(record)).not.toContain('sk-planted');
    expect(logged).toMatchObject([{ message: 'key=***' }]);
  });

  it('refuses bodies over 1 MiB with 413 and malformed JSON with 400', async () => {
    const huge = await call(
      'POST',
      '/workflows',
      JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10), steps: [ONE_STEP] }),
    );
    expect(huge.status).toBe(413);
    expect(huge.body.error.message).toMatch(/1 MiB/);
    const broken = await call('POST', '/workflows', '{"name": ');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('malformed_json');
  });

  it('lists and redrives dead tasks; redrive is idempotent', async () => {
    const { id } = (await engine.queue.enqueue('emails', { to: 'a@b.c' })).task;
    let fail = true;
    engine.work('emails', async () => {
      if (fail) throw new TerminalError('mailbox gone');
      return 'sent';
    });
    const dead = await eventually(async () => {
      const { body } = await call('GET', '/dlq');
      return body.count === 1 ? body.tasks[0] : undefined;
    });
    expect(dead).toMatchObject({
      id,
      queue: 'emails',
      attempts: 1,
      last_error: 'TerminalError: mailbox gone',
      payload: { to: 'a@b.c' },
    });
    fail = false;
    const first = await call('POST', `/dlq/${id}/redrive`);
    expect(first.body).toMatchObject({ id, redriven: true });
    await eventually(async () => (await engine.queue.get(id)).state === 'completed');
    expect((await call('POST', `/dlq/${id}/redrive`)).body).toMatchObject({ id, redriven: false, state: 'completed' });
    expect((await call('GET', '/dlq')).body.count).toBe(0);
    expect((await call('POST', '/dlq/tsk_missing/redrive')).status).toBe(404);
  });

  it('publishes an OpenAPI 3.1 document of every route', async () => {
    const { body } = await call('GET', '/openapi.json');
    expect(body.openapi).toBe('3.1.0');
    expect(Object.keys(body.paths)).toEqual(
      expect.arrayContaining([
        '/workflows',
        '/workflows/{id}/execute',
        '/workflows/{id}/executions/{execution_id}',
        '/dlq',
        '/secrets',
        '/healthz',
      ]),
    );
    expect(body.paths['/workflows'].post.requestBody.content['application/json'].schema.properties.steps).toBeDefined();
  });
});

describe('HTTP API auth', () => {
  it('needs the bearer token on every route but /healthz', async () => {
    const t = await testEngine(backends[0]!);
    try {
      const app = createApp({
        engine: t.engine,
        workflows: storedWorkflows(t.engine, { secretKey: randomBytes(32) }),
        token: 's3cret',
      });
      expect((await app.fetch(new Request('http://api/healthz'))).status).toBe(200);
      expect((await app.fetch(new Request('http://api/workflows'))).status).toBe(401);
      expect(
        (await app.fetch(new Request('http://api/workflows', { headers: { authorization: 'Bearer nope' } }))).status,
      ).toBe(401);
      expect(
        (await app.fetch(new Request('http://api/workflows', { headers: { authorization: 'Bearer s3cret' } }))).status,
      ).toBe(200);
    } finally {
      await t.close();
    }
  });
});
