import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { startMockServices, type MockServices } from '../mock-services/index.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const quick = { initial_delay_seconds: 0.01, interval_seconds: 0.02, factor: 1.5, max_interval_seconds: 0.05 };

/** intake session → render (which never ends: a fault) polled; cancelling it is confirmed by polling the job (brief §8.1). */
function definition(url: string, name: string, confirmWait: number) {
  const job = `${url}/v1/render/jobs/{{steps.render.output.body.render_job_id}}`;
  return {
    name,
    states: { names: ['RENDERING', 'CANCELLED'], cancelled: 'CANCELLED' },
    steps: [
      {
        id: 'session',
        type: 'http_request',
        config: { method: 'POST', url: `${url}/v1/intake/sessions`, body: { title: 'Report', content: '# A\nb' } },
        compensate: { method: 'DELETE', url: `${url}/v1/intake/sessions/{{steps.session.output.body.session_id}}` },
      },
      {
        id: 'render',
        type: 'http_request',
        config: { method: 'POST', url: `${url}/v1/render/documents`, body: { lsp: { pages: [{ index: 1 }] } } },
      },
      {
        id: 'render_wait',
        type: 'poll',
        state: 'RENDERING',
        config: { url: job, until: { path: 'body.status', equals: 'complete' }, ...quick, max_wait_seconds: 60 },
        cancel: {
          method: 'POST',
          url: `${job}/cancel`,
          until: {
            url: job,
            until: { path: 'body.status', equals: 'cancelled' },
            fail_when: { path: 'body.status', in: ['complete', 'failed'] },
            ...quick,
            max_wait_seconds: confirmWait,
          },
        },
      },
    ],
  };
}

describe.each(backends)('a cancel polled until the service confirms (brief 004 §8.1) on $name', (backend) => {
  let app: Hono;
  let mock: MockServices;
  let close: () => Promise<void>;
  let saved = 0;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  /** Saves the definition, starts an execution, waits until it polls the render job, and cancels it. */
  const cancelMidRender = async (confirmWait: number) => {
    const saved_ = await call('POST', '/workflows', definition(mock.url, `render-${++saved}`, confirmWait));
    expect(saved_.status, JSON.stringify(saved_.body)).toBe(201);
    const wid = saved_.body.id as string;
    const eid = (await call('POST', `/workflows/${wid}/execute`, { trigger_data: {} })).body.execution_id as string;
    await eventually(async () => mock.calls({ method: 'GET', path: '/v1/render/jobs/{id}' }).length >= 2);
    expect((await call('POST', `/workflows/${wid}/executions/${eid}/cancel`, {})).status).toBe(202);
    const record = async () => (await call('GET', `/workflows/${wid}/executions/${eid}`)).body;
    const ended = () =>
      eventually(async () => ((r) => (r.status === 'cancelled' ? r : undefined))(await record()), 20_000);
    return { wid, eid, record, ended };
  };

  beforeEach(async () => {
    mock = await startMockServices({ speed: 20, seed: 7 });
    const t = await testEngine(backend, { pollMs: 100 });
    const workflows = storedWorkflows(t.engine, {
      secretKey: randomBytes(32),
      allow: ['127.0.0.1'],
      callbackBaseUrl: 'http://runledger.test',
    });
    app = createApp({ engine: t.engine, workflows });
    close = t.close;
  });
  afterEach(async () => {
    await close();
    await mock.close();
  });

  it('reaches cancelled only after the job reports cancelled; the session is deleted after that', async () => {
    mock.addFaults([
      { endpoint: 'POST /v1/render/documents', job: 'hang' },
      { endpoint: 'POST /v1/render/jobs/{id}/cancel', cancel: 'async', cancelling_polls: 3 },
    ]);
    const { eid, ended } = await cancelMidRender(30);
    const done = await ended();
    expect(done).toMatchObject({ status: 'cancelled', state: 'CANCELLED' });
    const wait = done.steps.find((s: { step_id: string }) => s.step_id === 'render_wait');
    // three GETs answered cancelling, the fourth cancelled
    expect(wait).toMatchObject({ status: 'cancelled', cancel: { status: 'confirmed', polls: 4, reason: null } });

    const calls = mock
      .calls()
      .map((c) => ({ what: `${c.method} ${c.path.replace(/\/(job|sess)[-_]\w+/, '/{id}')}`, c }));
    const cancelAt = calls.findIndex((x) => x.what === 'POST /v1/render/jobs/{id}/cancel');
    const after = calls.slice(cancelAt + 1);
    expect(after.map((x) => x.what)).toEqual([
      'GET /v1/render/jobs/{id}',
      'GET /v1/render/jobs/{id}',
      'GET /v1/render/jobs/{id}',
      'GET /v1/render/jobs/{id}',
      'DELETE /v1/intake/sessions/{id}',
    ]);
    expect(mock.calls({ method: 'POST', path: '/v1/render/jobs/{id}/cancel' })).toHaveLength(1);

    // the journal: the confirmation is complete before the run is cancelled
    const run = (await call('GET', `/runs/${eid}`)).body;
    expect(run.steps.find((s: { name: string }) => s.name === 'render_wait').cancel).toEqual({
      status: 'confirmed',
      polls: 4,
      reason: null,
    });
    const events = (await call('GET', `/runs/${eid}/events?limit=1000`)).body.events as { type: string; data: any }[];
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'compensation.polled')).toHaveLength(3);
    expect(types.indexOf('compensation.confirming')).toBeGreaterThan(types.indexOf('run.cancel_requested'));
    const confirmed = events.findIndex((e) => e.type === 'compensation.completed' && e.data.confirmed === true);
    expect(confirmed).toBeGreaterThan(types.lastIndexOf('compensation.polled'));
    expect(types.indexOf('run.cancelled')).toBeGreaterThan(confirmed);
  });

  it('refuses a bad cancel.until at save time, naming each field and its limit', async () => {
    const bad = definition(mock.url, 'bad', 5);
    const cancel = bad.steps[2]!.cancel as { until: Record<string, unknown> };
    Object.assign(cancel.until, { max_wait_seconds: -1, url: 'ftp://x/y', colour: 'red' });
    const res = await call('POST', '/workflows', bad);
    expect(res.status).toBe(400);
    expect(res.body.error.problems).toEqual([
      { path: 'steps[2].cancel.until.max_wait_seconds', message: expect.stringMatching(/at least 0/) },
      { path: 'steps[2].cancel.until', message: "unknown field 'colour'" },
    ]);
    Object.assign(cancel.until, { max_wait_seconds: 5, colour: undefined });
    delete cancel.until.colour;
    const url = await call('POST', '/workflows', bad);
    expect(url.status).toBe(400);
    expect(JSON.stringify(url.body)).toMatch(/steps\[2\]\.cancel\.until\.url.*scheme ftp/);
  });

  it('records a cancel the service never confirms as unconfirmed after its max wait, and is cancelled all the same', async () => {
    mock.addFaults([
      { endpoint: 'POST /v1/render/documents', job: 'hang' },
      { endpoint: 'POST /v1/render/jobs/{id}/cancel', cancel: 'never' },
    ]);
    const { record, ended } = await cancelMidRender(1.5);
    // while it waits for the confirmation the execution is not cancelled yet
    const confirming = await eventually(async () => {
      const r = await record();
      const wait = r.steps.find((s: { step_id: string }) => s.step_id === 'render_wait');
      return wait.cancel?.status === 'confirming' && r.status !== 'cancelled' ? r : undefined;
    });
    expect(confirming.status).toBe('running');
    const done = await ended();
    const wait = done.steps.find((s: { step_id: string }) => s.step_id === 'render_wait');
    expect(wait.status).toBe('cancelled');
    expect(wait.cancel).toMatchObject({
      status: 'unconfirmed',
      reason: expect.stringMatching(/not confirmed within 1.5 s/),
    });
    expect(wait.cancel.polls).toBeGreaterThan(1);
    // the service still says cancelling; the session was deleted all the same, after the cancel gave up
    const job = mock.calls({ method: 'GET', path: '/v1/render/jobs/{id}' }).at(-1)!;
    expect((await fetch(`${mock.url}${job.path}`).then((r) => r.json())).status).toBe('cancelling');
    expect(mock.calls({ method: 'DELETE' })).toHaveLength(1);
  });
});
