import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { packageVersion } from '../version.js';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from './app.js';

const note = { id: 'note', type: 'log', config: { message: 'hi {{trigger.name | default("you")}}' } };

describe.each(backends)('save-time checks and the API around them on %s', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    app = createApp({
      engine: t.engine,
      workflows: storedWorkflows(t.engine, { secretKey: randomBytes(32) }),
      version: packageVersion(),
    });
    close = t.close;
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
    return { status: res.status, headers: res.headers, body: res.status === 204 ? null : await res.json() };
  };

  it('refuses a secret that is not stored, and takes it once it is', async () => {
    const wf = {
      name: 'uses-secret',
      steps: [{ id: 'n', type: 'log', config: { message: 'key {{secrets.api_key}} and {{secrets.nope}}' } }],
    };
    const refused = await call('POST', '/workflows', wf);
    expect(refused.status).toBe(400);
    expect(refused.body.error.problems.map((p: { message: string }) => p.message)).toEqual([
      expect.stringMatching(/names no stored secret 'api_key'/),
      expect.stringMatching(/names no stored secret 'nope'/),
    ]);
    await call('POST', '/secrets', { name: 'api_key', value: 'k' });
    await call('POST', '/secrets', { name: 'nope', value: 'n' });
    expect((await call('POST', '/workflows', wf)).status).toBe(201);
  });

  it('keeps one workflow per name, and an unchanged update makes no new version', async () => {
    const first = await call('POST', '/workflows', { name: 'dup', steps: [note] });
    expect(first.status).toBe(201);
    const again = await call('POST', '/workflows', { name: 'dup', steps: [note] });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(new RegExp(`a workflow named 'dup' exists \\(${first.body.id}\\)`));
    const other = await call('POST', '/workflows', { name: 'other', steps: [note] });
    expect((await call('PUT', `/workflows/${other.body.id}`, { name: 'dup', steps: [note] })).status).toBe(409);

    const same = await call('PUT', `/workflows/${first.body.id}`, { steps: [note], name: 'dup' });
    expect(same.body).toMatchObject({ id: first.body.id, version: 1 });
    const changed = await call('PUT', `/workflows/${first.body.id}`, {
      name: 'dup',
      description: 'now described',
      steps: [note],
    });
    expect(changed.body.version).toBe(2);
    // deleted, the name is free again
    expect((await call('DELETE', `/workflows/${other.body.id}`)).status).toBe(204);
    expect((await call('POST', '/workflows', { name: 'other', steps: [note] })).status).toBe(201);
  });

  it('answers an unsupported method on an existing route with 405 and Allow; an unknown path stays 404', async () => {
    const patched = await call('PATCH', '/workflows');
    expect(patched.status).toBe(405);
    expect(patched.headers.get('allow')).toBe('GET, HEAD, POST');
    expect(patched.body.error.code).toBe('method_not_allowed');
    const one = await call('PATCH', '/workflows/wf_x');
    expect(one.headers.get('allow')).toBe('DELETE, GET, HEAD, PUT');
    expect((await call('DELETE', '/runs')).headers.get('allow')).toBe('GET, HEAD, POST');
    expect((await call('GET', '/nothing-here')).status).toBe(404);
  });

  it('carries the package version in the OpenAPI document, and documents the new routes', async () => {
    const doc = (await call('GET', '/openapi.json')).body;
    expect(doc.info.version).toBe(packageVersion());
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/runs',
        '/runs/{id}',
        '/runs/{id}/signal',
        '/runs/{id}/cancel',
        '/status',
        '/tasks',
        '/workflows/{id}/executions/{execution_id}/rerun',
      ]),
    );
  });

  it('reruns an execution: same version, the same trigger data or the given one, linked by rerun_of', async () => {
    const { body: wf } = await call('POST', '/workflows', { name: 'rerun-me', steps: [note] });
    const { body: first } = await call('POST', `/workflows/${wf.id}/execute`, { trigger_data: { name: 'ada' } });
    await call('PUT', `/workflows/${wf.id}`, { name: 'rerun-me', steps: [{ ...note, config: { message: 'v2' } }] });
    const rerun = await call('POST', `/workflows/${wf.id}/executions/${first.execution_id}/rerun`);
    expect(rerun).toMatchObject({ status: 202, body: { workflow_id: wf.id, status: 'pending' } });
    const done = await eventually(async () => {
      const r = (await call('GET', `/workflows/${wf.id}/executions/${rerun.body.execution_id}`)).body;
      return r.status === 'success' ? r : undefined;
    });
    expect(done).toMatchObject({
      workflow_version: 1,
      trigger_data: { name: 'ada' },
      rerun_of: { execution_id: first.execution_id },
    });
    const given = await call('POST', `/workflows/${wf.id}/executions/${first.execution_id}/rerun`, {
      trigger_data: { name: 'bob' },
    });
    expect((await call('GET', `/workflows/${wf.id}/executions/${given.body.execution_id}`)).body.trigger_data).toEqual({
      name: 'bob',
    });
    expect((await call('POST', `/workflows/${wf.id}/executions/ex_missing/rerun`)).status).toBe(404);
    expect(
      (await call('POST', `/workflows/${wf.id}/executions/${first.execution_id}/rerun`, { trigger_data: [] })).status,
    ).toBe(400);
  });

  it('shows the store status and tasks over HTTP', async () => {
    const status = await call('GET', '/status');
    expect(status.body).toMatchObject({
      dialect: backend.name === 'sqlite' ? 'sqlite' : 'postgres',
      schemaVersion: expect.any(Number),
      tasks: expect.any(Object),
    });
    const { body: wf } = await call('POST', '/workflows', { name: 'tasks', steps: [note] });
    await call('POST', `/workflows/${wf.id}/execute`);
    const tasks = await call('GET', '/tasks?limit=5');
    expect(tasks.body.tasks.length).toBeGreaterThan(0);
    expect(tasks.body.tasks[0]).toMatchObject({
      id: expect.any(String),
      queue: 'runledger.runs',
      state: expect.stringMatching(/ready|running|completed/),
    });
    expect((await call('GET', '/tasks?state=bogus')).body.error.problems[0].path).toBe('query.state');
    const history = await call('GET', `/tasks/${tasks.body.tasks[0].id}/events`);
    expect(history.body.events[0].type).toBe('task.enqueued');
    expect((await call('GET', '/tasks/task_missing/events')).status).toBe(404);
  });
});
