import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const template = {
  name: 'report-template',
  parameters: {
    customer: { type: 'string', description: 'whose report' },
    pages: { type: 'integer', default: 2 },
    tags: { type: 'array', default: ['a'] },
  },
  steps: [
    {
      id: 'shape',
      type: 'transform',
      config: {
        mapping: {
          customer: '{{params.customer}}',
          pages: '{{params.pages}}',
          tags: '{{params.tags}}',
          line: 'Report for {{params.customer}} ({{params.pages}} pages) asked by {{trigger.who}}',
        },
      },
    },
  ],
};

describe.each(backends)('workflow templates (brief 004 §15) on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    app = createApp({ engine: t.engine, workflows: storedWorkflows(t.engine, { secretKey: randomBytes(32) }) });
    close = t.close;
  });
  afterEach(async () => close());

  it('instantiates a template with its parameters filled in, and the instance executes', async () => {
    const saved = await call('POST', '/workflows', template);
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    expect(saved.body.parameters.customer).toEqual({ type: 'string', description: 'whose report' });

    const made = await call('POST', '/workflows/report-template/instantiate', {
      name: 'report-acme',
      params: { customer: 'Acme', pages: 5 },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ name: 'report-acme', version: 1 });
    expect(made.body.parameters).toBeUndefined();
    expect(made.body.steps[0].config.mapping).toEqual({
      customer: 'Acme',
      pages: 5,
      tags: ['a'],
      line: 'Report for Acme (5 pages) asked by {{trigger.who}}',
    });

    const run = await call('POST', `/workflows/${made.body.id}/execute`, { trigger_data: { who: 'Ada' } });
    expect(run.status).toBe(202);
    const done = await eventually(async () => {
      const r = (await call('GET', `/workflows/${made.body.id}/executions/${run.body.execution_id}`)).body;
      return r.status === 'running' || r.status === 'pending' ? undefined : r;
    }, 20_000);
    expect(done.status).toBe('success');
    expect(done.steps[0].output).toMatchObject({ pages: 5, line: 'Report for Acme (5 pages) asked by Ada' });
  });

  it('refuses to execute a template (409), directly or in a batch', async () => {
    const id = (await call('POST', '/workflows', template)).body.id as string;
    const run = await call('POST', `/workflows/${id}/execute`, {});
    expect(run.status).toBe(409);
    expect(run.body.error.message).toContain('is a template');
    expect((await call('POST', `/workflows/${id}/batches`, { inputs: [{}] })).status).toBe(409);
    expect((await call('GET', `/workflows/${id}/executions`)).body.count).toBe(0);
  });

  it('answers a missing, unknown or mistyped parameter with a 400 naming it, and stores nothing', async () => {
    const id = (await call('POST', '/workflows', template)).body.id as string;
    const instantiate = (params: unknown) => call('POST', `/workflows/${id}/instantiate`, { name: 'x', params });
    const missing = await instantiate({ pages: 3 });
    expect(missing.status).toBe(400);
    expect(missing.body.error.problems).toEqual([
      { path: 'params.customer', message: 'required (string: whose report)' },
    ]);
    const wrong = await instantiate({ customer: 'A', pages: 2.5, tags: 'b' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.problems.map((p: { path: string }) => p.path)).toEqual(['params.pages', 'params.tags']);
    expect(wrong.body.error.message).toContain('must be an integer (got number)');
    const unknown = await instantiate({ customer: 'A', colour: 'red' });
    expect(unknown.body.error.problems).toEqual([
      { path: 'params.colour', message: 'no such parameter (declared: customer, pages, tags)' },
    ]);
    expect((await call('GET', '/workflows')).body.count).toBe(1);
  });

  it('checks a template at save time: params only declared, plain, in a template; defaults of their type', async () => {
    const step = (text: string) => [{ id: 's', type: 'log', config: { message: text } }];
    const cases: Array<[unknown, string, string]> = [
      [{ name: 'a', steps: step('{{params.x}}') }, 'steps[0].config.message', 'only a template'],
      [{ ...template, name: 'b', steps: step('{{params.nope}}') }, 'steps[0].config.message', "no parameter 'nope'"],
      [{ ...template, name: 'c', steps: step('{{params.customer | upper}}') }, 'steps[0].config.message', 'as it is'],
      [
        { ...template, name: 'd', parameters: { n: { type: 'number', default: 'one' } } },
        'parameters.n.default',
        'must be a number (got string)',
      ],
    ];
    for (const [definition, path, message] of cases) {
      const saved = await call('POST', '/workflows', definition);
      expect(saved.status, JSON.stringify(saved.body)).toBe(400);
      const problem = saved.body.error.problems.find((p: { path: string }) => p.path === path);
      expect(problem?.message, JSON.stringify(saved.body.error.problems)).toContain(message);
    }
    const plain = (await call('POST', '/workflows', { name: 'plain', steps: step('hi') })).body.id as string;
    const notTemplate = await call('POST', `/workflows/${plain}/instantiate`, { name: 'y' });
    expect(notTemplate.status).toBe(409);
  });
});
