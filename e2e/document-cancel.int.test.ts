import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../src/app/workflows.js';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { createApp } from '../src/server/app.js';
import { backends } from '../src/testing/backends.js';
import { eventually, testEngine } from '../src/testing/engine.js';
import { pipelineForTests } from './pipeline.js';

/**
 * Brief 004 §9: who cancelled (a user, or the engine at the execution's timeout_seconds), and "delete partial
 * artifacts" as an option of the cancel, which the example's compensations read as {{cancel.delete_artifacts}}.
 */
describe.each(backends)('cancelling the document pipeline (brief 004 §9) on $name', (backend) => {
  let mock: MockServices;
  let app: Hono;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const save = async (definition: unknown) => {
    const res = await call('POST', '/workflows', definition);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const execute = async (wid: string) =>
    (await call('POST', `/workflows/${wid}/execute`, { trigger_data: { services: mock.url, content: '# Q3' } })).body
      .execution_id as string;
  const record = async (wid: string, eid: string) => (await call('GET', `/workflows/${wid}/executions/${eid}`)).body;
  const finished = (wid: string, eid: string) =>
    eventually(async () => {
      const body = await record(wid, eid);
      return ['success', 'partial_success', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    }, 30_000);
  const artifactDeletes = () => mock.calls({ method: 'DELETE', path: '/v1/artifacts/{id}' });

  /** Word rendered (its artifact exists), PowerPoint still rendering: the moment a cancel leaves a partial artifact. */
  const wordDone = async () => {
    mock.setFaults([{ endpoint: 'POST /v1/render/presentations', job: 'hang', times: 'always' }]);
    const wid = await save(pipelineForTests());
    const eid = await execute(wid);
    const artifact = await eventually(async () => {
      const word = (await record(wid, eid)).steps.find((s: any) => s.step_id === 'wait_word');
      return word.status === 'success' ? (word.output.body.artifact_id as string) : undefined;
    }, 20_000);
    return { wid, eid, artifact };
  };

  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 12 });
  });
  afterAll(() => mock.close());
  beforeEach(async () => {
    mock.reset();
    const t = await testEngine(backend, { pollMs: 100 });
    const workflows = storedWorkflows(t.engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    app = createApp({ engine: t.engine, workflows });
    close = () => t.close();
  });
  afterEach(() => close());

  it('a cancel with delete_artifacts deletes the artifact Word produced; the record says a user asked, and why', async () => {
    const { wid, eid, artifact } = await wordDone();
    const asked = await call('POST', `/workflows/${wid}/executions/${eid}/cancel`, {
      reason: 'customer withdrew',
      delete_artifacts: true,
    });
    expect(asked.status).toBe(202);
    const done = await finished(wid, eid);
    expect(done).toMatchObject({
      status: 'cancelled',
      state: 'CANCELLED',
      cancelled_by: 'user',
      cancel_reason: 'customer withdrew',
    });
    expect(artifactDeletes().map((c) => c.path)).toEqual([`/v1/artifacts/${artifact}`]);
    expect((await fetch(`${mock.url}/v1/artifacts/${artifact}`)).status).toBe(404);
    const requests = (await call('GET', `/runs/${eid}/events?types=run.cancel_requested&limit=10`)).body.events;
    expect(requests.map((e: any) => e.data)).toEqual([{ reason: 'customer withdrew', delete_artifacts: true }]);
  });

  it('a cancel without it keeps the artifact: the compensation is journaled as skipped by its when', async () => {
    const { wid, eid, artifact } = await wordDone();
    expect((await call('POST', `/workflows/${wid}/executions/${eid}/cancel`)).status).toBe(202);
    const done = await finished(wid, eid);
    expect(done).toMatchObject({
      status: 'cancelled',
      state: 'CANCELLED',
      cancelled_by: 'user',
      cancel_reason: 'cancelled',
    });
    expect(artifactDeletes()).toEqual([]);
    expect((await fetch(`${mock.url}/v1/artifacts/${artifact}`)).status).toBe(200);
    const compensations = (await call('GET', `/runs/${eid}/events?types=compensation.completed&limit=100`)).body.events;
    expect(compensations.map((e: any) => e.data)).toContainEqual(
      expect.objectContaining({ name: 'wait_word', skipped: 'when: {{cancel.delete_artifacts}} is false' }),
    );
  });

  it('the engine cancels an execution past its timeout_seconds: cancelled_by system, the reason names the limit', async () => {
    mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
    const wid = await save({ ...pipelineForTests(), timeout_seconds: 1 });
    const eid = await execute(wid);
    const done = await finished(wid, eid);
    expect(done).toMatchObject({ status: 'cancelled', state: 'CANCELLED', cancelled_by: 'system' });
    expect(done.cancel_reason).toMatch(/^timeout: /);
    expect(artifactDeletes()).toEqual([]);
  });

  it('a running execution never cancelled shows cancelled_by null; {{cancel.…}} outside a compensation is a 400', async () => {
    mock.setFaults([{ endpoint: 'POST /v1/render/*', job: 'hang', times: 'always' }]);
    const wid = await save(pipelineForTests());
    const eid = await execute(wid);
    expect(await record(wid, eid)).toMatchObject({ cancelled_by: null, cancel_reason: null });
    await call('POST', `/workflows/${wid}/executions/${eid}/cancel`);
    await finished(wid, eid);

    const bad = pipelineForTests();
    bad.steps[0].config.body.title = '{{cancel.reason}}';
    const res = await call('POST', '/workflows', bad);
    expect(res.status).toBe(400);
    expect(res.body.error.problems).toContainEqual({
      path: 'steps[0].config',
      message: expect.stringContaining('{{cancel.…}} exists only in a compensation'),
    });
    const notBool = await call('POST', `/workflows/${wid}/executions/${eid}/cancel`, { delete_artifacts: 'yes' });
    expect(notBool.status).toBe(400);
  });
});
