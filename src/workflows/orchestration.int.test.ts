import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';

interface Call {
  method: string;
  path: string;
  key: string | undefined;
  body: any;
}
type Handler = (call: Call) => { status: number; body?: unknown } | undefined;

/** A small stand-in for a slow service: each test says how it answers; every request is logged. */
async function fakeService(handler: Handler) {
  const calls: Call[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const call: Call = {
        method: req.method!,
        path: req.url!,
        key: req.headers['idempotency-key'] as string | undefined,
        body: text ? JSON.parse(text) : null,
      };
      calls.push(call);
      const answer = handler(call) ?? { status: 404, body: { error: 'not found' } };
      res
        .writeHead(answer.status, { 'content-type': 'application/json' })
        .end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls: (method?: string, prefix?: string) =>
      calls.filter((c) => (!method || c.method === method) && (!prefix || c.path.startsWith(prefix))),
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

const quickPoll = { initial_delay_seconds: 0.01, interval_seconds: 0.02, factor: 1.5, max_interval_seconds: 0.05 };
const quickRetry = { max_attempts: 3, backoff_seconds: 0.01, backoff_rate: 2 };
const STATES = [
  'INITIALIZED',
  'SUBMITTED',
  'PROCESSING',
  'COMPLETE',
  'DELIVERED',
  'FAILED_VALIDATION',
  'FAILED_JOB',
  'FAILED',
  'CANCELLED',
  'PARTIAL_COMPLETE',
];

/** create a thing → submit a job → poll it → done; each with its states, compensation and cancel. */
function pipeline(url: string, options: { maxWait?: number } = {}) {
  return {
    name: 'pipeline',
    states: {
      names: STATES,
      initial: 'INITIALIZED',
      success: 'DELIVERED',
      failed: 'FAILED',
      cancelled: 'CANCELLED',
      partial: 'PARTIAL_COMPLETE',
    },
    steps: [
      {
        id: 'create',
        type: 'http_request',
        config: { method: 'POST', url: `${url}/things` },
        state_after: 'SUBMITTED',
        compensate: { method: 'DELETE', url: `${url}/things/{{steps.create.output.body.id}}` },
      },
      {
        id: 'submit',
        type: 'http_request',
        retry: quickRetry,
        config: { method: 'POST', url: `${url}/jobs`, body: { mode: '{{trigger.mode | default("ai")}}' } },
        on_error: [{ status: '4xx', state: 'FAILED_VALIDATION' }],
      },
      {
        id: 'wait',
        type: 'poll',
        label: 'Waiting for the job…',
        state: 'PROCESSING',
        state_after: 'COMPLETE',
        retry: quickRetry,
        config: {
          url: `${url}/jobs/{{steps.submit.output.body.id}}`,
          until: { path: 'body.status', equals: 'complete' },
          fail_when: { path: 'body.status', in: ['failed'] },
          ...quickPoll,
          max_wait_seconds: options.maxWait ?? 30,
        },
        cancel: { method: 'POST', url: `${url}/jobs/{{steps.submit.output.body.id}}/cancel` },
        on_error: [{ timed_out: true, state: 'FAILED_JOB' }],
      },
      {
        id: 'done',
        type: 'transform',
        label: 'Delivering…',
        config: { mapping: { job: '{{steps.wait.output.body.id}}' } },
      },
    ],
  };
}

describe.each(backends)('orchestrating slow services (stored workflows) on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;
  const closers: (() => void)[] = [];

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  let saved = 0;
  // names are unique per database: each saved definition gets its own
  const save = async (definition: { name: string; [key: string]: unknown }): Promise<string> => {
    const res = await call('POST', '/workflows', { ...definition, name: `${definition.name}-${++saved}` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  };
  const execute = async (wid: string, trigger: object = {}) =>
    (await call('POST', `/workflows/${wid}/execute`, { trigger_data: trigger })).body.execution_id as string;
  const record = async (wid: string, eid: string) => (await call('GET', `/workflows/${wid}/executions/${eid}`)).body;
  const finished = (wid: string, eid: string) =>
    eventually(async () => {
      const body = await record(wid, eid);
      return ['success', 'partial_success', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    }, 20_000);
  const service = async (handler: Handler) => {
    const fake = await fakeService(handler);
    closers.push(fake.close);
    return fake;
  };
  /** Jobs that complete after `polls` GETs (or fail, or never end), numbered job-1, job-2 … */
  const jobs = (outcome: (n: number, call: Call) => 'complete' | 'failed' | 'hang', polls = 2) => {
    let made = 0;
    const seen = new Map<string, number>();
    return (c: Call) => {
      if (c.method === 'POST' && c.path === '/things') return { status: 201, body: { id: 'thing-1' } };
      if (c.method === 'DELETE' && c.path.startsWith('/things/')) return { status: 204 };
      if (c.method === 'POST' && c.path === '/jobs')
        return { status: 202, body: { id: `job-${++made}`, status: 'queued', mode: c.body?.mode } };
      const poll = /^\/jobs\/(job-\d+)$/.exec(c.path);
      if (c.method === 'GET' && poll) {
        const n = (seen.get(poll[1]!) ?? 0) + 1;
        seen.set(poll[1]!, n);
        const end = outcome(Number(poll[1]!.slice(4)), c);
        const status = n < polls || end === 'hang' ? 'processing' : end;
        return { status: 200, body: { id: poll[1], status } };
      }
      if (c.method === 'POST' && /^\/jobs\/job-\d+\/cancel$/.test(c.path))
        return { status: 200, body: { status: 'cancelled' } };
      return undefined;
    };
  };

  beforeEach(async () => {
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
    for (const c of closers.splice(0)) c();
    await close();
  });

  it('polls to completion through each state; the record shows progress, and an ETA once there is history', async () => {
    const fake = await service(jobs(() => 'complete', 3));
    const wid = await save(pipeline(fake.url));
    const eid = await execute(wid);
    const first = await record(wid, eid);
    expect(first.eta_seconds).toBeNull();
    expect(first.progress).toEqual({ done: 0, total: 4 });
    const done = await finished(wid, eid);
    expect(done).toMatchObject({
      status: 'success',
      state: 'DELIVERED',
      progress: { done: 4, total: 4 },
      current_step: null,
      eta_seconds: 0,
    });
    expect(done.steps.map((s: any) => `${s.step_id} ${s.status}`)).toEqual([
      'create success',
      'submit success',
      'wait success',
      'done success',
    ]);
    expect(done.steps[2]).toMatchObject({
      type: 'poll',
      attempts: 3,
      output: { status: 200, body: { id: 'job-1', status: 'complete' } },
    });
    expect(fake.calls('GET')).toHaveLength(3);
    const events = (await call('GET', `/runs/${eid}/events?types=state.changed&limit=100`)).body.events.map(
      (e: any) => e.data.name,
    );
    expect(events).toEqual(['INITIALIZED', 'SUBMITTED', 'PROCESSING', 'COMPLETE', 'DELIVERED']);
    // the second execution has a median for every step: an ETA from its first record on
    const second = await record(wid, await execute(wid));
    expect(typeof second.eta_seconds).toBe('number');
  });

  it('retries a 503 twice with one idempotency key, and fails fast on a 422 into the mapped state, compensating', async () => {
    let posts = 0;
    const base = jobs(() => 'complete');
    const fake = await service((c) =>
      c.method === 'POST' && c.path === '/jobs' && ++posts <= 2 ? { status: 503, body: { error: 'busy' } } : base(c),
    );
    const wid = await save(pipeline(fake.url));
    const ok = await finished(wid, await execute(wid));
    expect(ok.status).toBe('success');
    const submits = fake.calls('POST', '/jobs').filter((c) => c.path === '/jobs');
    expect(submits).toHaveLength(3);
    expect(new Set(submits.map((c) => c.key)).size).toBe(1);

    const refusing = await service((c) =>
      c.method === 'POST' && c.path === '/jobs' ? { status: 422, body: { error: 'content_invalid' } } : base(c),
    );
    const wid2 = await save(pipeline(refusing.url));
    const failed = await finished(wid2, await execute(wid2));
    expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_VALIDATION' });
    expect(refusing.calls('POST').filter((c) => c.path === '/jobs')).toHaveLength(1);
    // the created thing is deleted by its compensation
    expect(refusing.calls('DELETE').map((c) => c.path)).toEqual(['/things/thing-1']);
  });

  it('ends a poll past its maximum wait timed_out in the mapped failure state, cancels the job, and a rerun with new input succeeds', async () => {
    const hanging = await service(jobs(() => 'hang'));
    const wid = await save(pipeline(hanging.url, { maxWait: 0.3 }));
    const eid = await execute(wid, { mode: 'ai' });
    const failed = await finished(wid, eid);
    expect(failed).toMatchObject({ status: 'failed', state: 'FAILED_JOB' });
    expect(failed.steps.find((s: any) => s.step_id === 'wait').status).toBe('timed_out');
    expect(
      hanging
        .calls('POST')
        .filter((c) => c.path.endsWith('/cancel'))
        .map((c) => c.path),
    ).toEqual(['/jobs/job-1/cancel']);
    expect(hanging.calls('DELETE')).toHaveLength(1);

    // the same service now completes jobs: rerun from submit with rule_only, reusing create
    const completing = await service(jobs(() => 'complete'));
    const wid2 = await save(pipeline(completing.url, { maxWait: 5 }));
    const eid2 = await execute(wid2, { mode: 'ai' });
    await finished(wid2, eid2);
    const creates = completing.calls('POST').filter((c) => c.path === '/things').length;
    const rerun = await call('POST', `/workflows/${wid2}/executions/${eid2}/rerun`, {
      from_step: 'submit',
      trigger_data: { mode: 'rule_only' },
    });
    expect(rerun.status).toBe(202);
    const again = await finished(wid2, rerun.body.execution_id);
    expect(again).toMatchObject({
      status: 'success',
      state: 'DELIVERED',
      rerun_of: { execution_id: eid2, from_step: 'submit' },
    });
    expect(again.steps[0].input).toEqual({ reused_from: eid2 });
    expect(completing.calls('POST').filter((c) => c.path === '/things')).toHaveLength(creates);
    expect(
      completing
        .calls('POST')
        .filter((c) => c.path === '/jobs')
        .at(-1)!.body,
    ).toEqual({ mode: 'rule_only' });
    expect((await record(wid2, eid2)).reruns).toEqual([{ execution_id: rerun.body.execution_id, from_step: 'submit' }]);
    expect(
      (await call('POST', `/workflows/${wid2}/executions/${eid2}/rerun`, { from_step: 'nope' })).body.error.problems[0],
    ).toMatchObject({ path: 'from_step' });
  });

  it('ends partial_success when a branch fails, and retrying the failed branch reuses the one that succeeded', async () => {
    let failPpt = true;
    const base = jobs(() => 'complete');
    const fake = await service((c) => {
      if (c.method === 'POST' && c.path === '/render/word') return { status: 202, body: { id: 'word-1' } };
      if (c.method === 'POST' && c.path === '/render/ppt') return { status: 202, body: { id: 'ppt-1' } };
      if (c.method === 'GET' && c.path === '/render/word-1') return { status: 200, body: { status: 'complete' } };
      if (c.method === 'GET' && c.path === '/render/ppt-1')
        return {
          status: 200,
          body: failPpt ? { status: 'failed', error: 'Image asset not found' } : { status: 'complete' },
        };
      return base(c);
    });
    const branch = (name: string) => [
      { id: `submit_${name}`, type: 'http_request', config: { method: 'POST', url: `${fake.url}/render/${name}` } },
      {
        id: `poll_${name}`,
        type: 'poll',
        label: `Rendering ${name}…`,
        config: {
          url: `${fake.url}/render/{{steps.submit_${name}.output.body.id}}`,
          until: { path: 'body.status', equals: 'complete' },
          fail_when: { path: 'body.status', equals: 'failed' },
          ...quickPoll,
        },
      },
    ];
    const definition = {
      name: 'render',
      states: { names: STATES, success: 'DELIVERED', partial: 'PARTIAL_COMPLETE', failed: 'FAILED' },
      steps: [
        { id: 'render', type: 'parallel', config: { branches: { word: branch('word'), ppt: branch('ppt') } } },
        {
          id: 'deliver',
          type: 'transform',
          state_after: 'DELIVERED',
          config: { mapping: { word: '{{steps.poll_word.output.body.status}}' } },
        },
      ],
    };
    const wid = await save(definition);
    const eid = await execute(wid);
    const partial = await finished(wid, eid);
    expect(partial).toMatchObject({ status: 'partial_success', state: 'PARTIAL_COMPLETE' });
    const render = partial.steps.find((s: any) => s.step_id === 'render');
    expect(render.branches).toEqual({
      word: { status: 'success', error: null },
      ppt: { status: 'failed', error: expect.stringContaining('body.status = "failed"') },
    });
    expect(partial.steps.find((s: any) => s.step_id === 'deliver').status).toBe('skipped');
    expect(partial.steps.filter((s: any) => s.branch === 'word').map((s: any) => s.status)).toEqual([
      'success',
      'success',
    ]);

    failPpt = false;
    const wordSubmits = fake.calls('POST', '/render/word').length;
    const retried = await call('POST', `/workflows/${wid}/executions/${eid}/retry`, { branches: ['ppt'] });
    expect(retried.status).toBe(202);
    expect(retried.body.branches).toEqual(['ppt']);
    const ok = await finished(wid, retried.body.execution_id);
    expect(ok).toMatchObject({
      status: 'success',
      state: 'DELIVERED',
      rerun_of: { execution_id: eid, branches: ['ppt'] },
    });
    expect(fake.calls('POST', '/render/word')).toHaveLength(wordSubmits);
    expect(fake.calls('POST', '/render/ppt')).toHaveLength(2);
    expect((await call('POST', `/workflows/${wid}/executions/${eid}/retry`, { branches: ['word'] })).status).toBe(400);
    expect((await call('POST', `/workflows/${wid}/executions/${ok.execution_id}/retry`)).status).toBe(409);
  });

  it('cancels mid-poll: each in-flight cancel endpoint is called once, compensations run, the execution ends CANCELLED', async () => {
    const fake = await service(jobs(() => 'hang'));
    const definition = pipeline(fake.url);
    const wid = await save(definition);
    const eid = await execute(wid);
    await eventually(async () => fake.calls('GET').length >= 2);
    expect((await call('POST', `/workflows/${wid}/executions/${eid}/cancel`)).status).toBe(202);
    const cancelled = await finished(wid, eid);
    expect(cancelled).toMatchObject({ status: 'cancelled', state: 'CANCELLED' });
    expect(
      fake
        .calls('POST')
        .filter((c) => c.path.endsWith('/cancel'))
        .map((c) => c.path),
    ).toEqual(['/jobs/job-1/cancel']);
    expect(fake.calls('DELETE').map((c) => c.path)).toEqual(['/things/thing-1']);
    // the cancel came before the delete: newest first
    const paths = fake.calls().map((c) => `${c.method} ${c.path}`);
    expect(paths.indexOf('POST /jobs/job-1/cancel')).toBeLessThan(paths.indexOf('DELETE /things/thing-1'));
  });

  it('completes a wait_for_callback step once with the POSTed body; a repeat of it is a duplicate at any time, another body a 409, and neither changes anything', async () => {
    const fake = await service((c) =>
      c.method === 'POST' && c.path === '/register' ? { status: 202, body: { ok: true } } : undefined,
    );
    const wid = await save({
      name: 'callback',
      steps: [
        {
          id: 'await_render',
          type: 'wait_for_callback',
          timeout_seconds: 60,
          config: {
            request: { method: 'POST', url: `${fake.url}/register`, body: { callback_url: '{{callback.url}}' } },
          },
        },
        {
          id: 'after',
          type: 'transform',
          config: { mapping: { artifact: '{{steps.await_render.output.artifact_id}}' } },
        },
      ],
    });
    const eid = await execute(wid);
    await eventually(() => fake.calls('POST').length === 1);
    const url = new URL(fake.calls('POST')[0]!.body.callback_url);
    expect(url.origin).toBe('http://runledger.test');
    expect((await call('POST', url.pathname.replace(/.$/, 'x'), { artifact_id: 'a' })).status).toBe(404);
    const first = await call('POST', url.pathname, { status: 'complete', artifact_id: 'art-1' });
    expect(first).toMatchObject({
      status: 200,
      body: { execution_id: eid, step_id: 'await_render', status: 'completed' },
    });
    expect(await call('POST', url.pathname, { status: 'complete', artifact_id: 'art-2' })).toMatchObject({
      status: 409,
      body: { error: { message: expect.stringContaining('already completed with a different body') } },
    });
    // the same delivery again, its keys in another order (PostgreSQL's jsonb keeps its own)
    expect(await call('POST', url.pathname, { artifact_id: 'art-1', status: 'complete' })).toMatchObject({
      status: 200,
      body: { status: 'duplicate' },
    });
    const done = await finished(wid, eid);
    expect(done.status).toBe('success');
    expect(done.steps.at(-1).output).toEqual({ artifact: 'art-1' });
    // after the end: the sender retrying the delivery that succeeded still sees success; anything else is refused
    expect(await call('POST', url.pathname, { status: 'complete', artifact_id: 'art-1' })).toMatchObject({
      status: 200,
      body: { status: 'duplicate' },
    });
    expect((await call('POST', url.pathname, { artifact_id: 'art-3' })).status).toBe(409);
    const waits = (await call('GET', `/runs/${eid}/events?types=wait.completed,signal.sent&limit=100`)).body.events.map(
      (e: any) => e.type,
    );
    expect(waits).toEqual(['signal.sent', 'wait.completed']);
  });

  it('expires a callback URL with its step: the step ends timed_out in its state, a late POST is refused', async () => {
    const fake = await service((c) =>
      c.method === 'POST' && c.path === '/register' ? { status: 202, body: {} } : undefined,
    );
    const wid = await save({
      name: 'late-callback',
      states: { names: STATES },
      steps: [
        {
          id: 'await_job',
          type: 'wait_for_callback',
          timeout_seconds: 0.3,
          on_error: [{ timed_out: true, state: 'FAILED_JOB' }],
          config: {
            request: { method: 'POST', url: `${fake.url}/register`, body: { callback_url: '{{callback.url}}' } },
          },
        },
      ],
    });
    const eid = await execute(wid);
    await eventually(
      async () =>
        (await record(wid, eid)).steps[0].status === 'running' || (await record(wid, eid)).status === 'failed',
    );
    const done = await finished(wid, eid);
    expect(done).toMatchObject({ status: 'failed', state: 'FAILED_JOB' });
    expect(done.steps[0].status).toBe('timed_out');
    const path = new URL(fake.calls('POST')[0]!.body.callback_url).pathname;
    expect((await call('POST', path, { late: true })).status).toBe(409);
  });

  it('cancels an execution past its timeout_seconds as the system (brief 004 §9.1) and compensates', async () => {
    const fake = await service(jobs(() => 'hang'));
    const definition = {
      ...pipeline(fake.url),
      // long enough for the poll to be in flight at the deadline on a loaded machine (the job hangs for ever)
      timeout_seconds: 2,
      on_error: [{ timed_out: true, state: 'FAILED_JOB' }],
    };
    definition.steps[2]!.on_error = [];
    const wid = await save(definition);
    const eid = await execute(wid);
    const done = await finished(wid, eid);
    expect(done).toMatchObject({
      status: 'cancelled',
      state: 'CANCELLED',
      cancelled_by: 'system',
      cancel_reason: expect.stringMatching(/^timeout: the run had not ended by its deadline \(\d{4}-/),
    });
    expect(fake.calls('POST').filter((c) => c.path.endsWith('/cancel'))).toHaveLength(1);
    expect(fake.calls('DELETE')).toHaveLength(1);
    const requests = (await call('GET', `/runs/${eid}/events?types=run.cancel_requested&limit=10`)).body.events;
    expect(requests.map((e: any) => e.data.by)).toEqual(['system']);
  });

  it('refuses bad orchestration fields at save time, each with its JSON path', async () => {
    const res = await call('POST', '/workflows', {
      name: 'bad',
      states: { names: ['A'] },
      steps: [
        {
          id: 'p',
          type: 'poll',
          state: 'NOPE',
          config: { url: 'http://x', until: { path: 'body.status', equals: 'x', in: ['y'] }, factor: 0.5 },
        },
        { id: 'c', type: 'wait_for_callback', config: {} },
        {
          id: 'par',
          type: 'parallel',
          config: {
            branches: {
              a: [{ id: 'a1', type: 'log', config: { message: '{{steps.b1.output}} {{callback.url}}' } }],
              b: [{ id: 'b1', type: 'log', config: { message: 'x' } }],
            },
          },
        },
      ],
    });
    expect(res.status).toBe(400);
    const paths = res.body.error.problems.map((p: any) => p.path);
    expect(paths).toEqual(expect.arrayContaining(['steps[0].config.until', 'steps[0].config.factor']));
    const semantic = await call('POST', '/workflows', {
      name: 'bad2',
      states: { names: ['A'] },
      steps: [
        {
          id: 'p',
          type: 'poll',
          state: 'NOPE',
          config: { url: 'http://x', until: { path: 'body.status', equals: 'x' } },
        },
        { id: 'c', type: 'wait_for_callback', config: {} },
        {
          id: 'par',
          type: 'parallel',
          retry: { max_attempts: 2 },
          config: {
            branches: {
              a: [{ id: 'a1', type: 'log', config: { message: '{{steps.b1.output}} {{callback.url}}' } }],
              b: [{ id: 'b1', type: 'log', config: { message: 'x' } }],
            },
          },
        },
      ],
    });
    expect(semantic.status).toBe(400);
    expect(semantic.body.error.problems).toContainEqual({
      path: 'steps[2].retry',
      message: expect.stringContaining('a parallel step has none of its own'),
    });
    expect(semantic.body.error.problems).toEqual(
      expect.arrayContaining([
        { path: 'steps[0].state', message: expect.stringContaining("'NOPE' is not one of states.names") },
        { path: 'steps[1].timeout_seconds', message: expect.stringContaining('required') },
        { path: 'steps[2].config.branches.a[0].config', message: expect.stringContaining('another branch') },
        { path: 'steps[2].config.branches.a[0].config', message: expect.stringContaining('{{callback.') },
      ]),
    );
  });
});
