import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from './app.js';

const definition = (message: string) => ({ name: 'greet', steps: [{ id: 'say', type: 'log', config: { message } }] });

/** Issue 42, point 6: a repeated Idempotency-Key answers the execution as it is, like every idempotent route. */
describe.each(backends)('POST /workflows/{id}/execute repeated on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
    );
    return { status: res.status, body: await res.json() };
  };
  const execute = (id: string, key: string) =>
    call('POST', `/workflows/${id}/execute`, { trigger_data: {} }, { 'idempotency-key': key });
  const succeeded = (id: string, eid: string) =>
    eventually(async () => (await call('GET', `/workflows/${id}/executions/${eid}`)).body.status === 'success', 15_000);

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    app = createApp({
      engine: t.engine,
      workflows: storedWorkflows(t.engine, { secretKey: randomBytes(32) }),
    });
    close = t.close;
  });
  afterEach(() => close());

  it('answers 202 pending first, then 200 with the real status and duplicate: true once it succeeded', async () => {
    const { body: wf } = await call('POST', '/workflows', definition('v1'));
    const first = await execute(wf.id, 'order-42');
    expect(first).toEqual({
      status: 202,
      body: {
        execution_id: expect.stringMatching(/^ex_/),
        workflow_id: wf.id,
        workflow_version: 1,
        status: 'pending',
        duplicate: false,
      },
    });
    await succeeded(wf.id, first.body.execution_id);
    const again = await execute(wf.id, 'order-42');
    expect(again).toEqual({
      status: 200,
      body: {
        execution_id: first.body.execution_id,
        workflow_id: wf.id,
        workflow_version: 1,
        status: 'success',
        duplicate: true,
      },
    });
    expect((await call('GET', `/workflows/${wf.id}/executions`)).body.count).toBe(1);
  });

  it('answers the version the execution ran after the workflow was updated, and starts nothing on the new one', async () => {
    const { body: wf } = await call('POST', '/workflows', definition('v1'));
    const first = await execute(wf.id, 'order-7');
    await succeeded(wf.id, first.body.execution_id);
    expect((await call('PUT', `/workflows/${wf.id}`, definition('v2'))).body.version).toBe(2);
    const again = await execute(wf.id, 'order-7');
    expect(again).toEqual({
      status: 200,
      body: {
        execution_id: first.body.execution_id,
        workflow_id: wf.id,
        workflow_version: 1,
        status: 'success',
        duplicate: true,
      },
    });
    const other = await execute(wf.id, 'order-8');
    expect(other).toMatchObject({ status: 202, body: { workflow_version: 2, status: 'pending', duplicate: false } });
  });
});
