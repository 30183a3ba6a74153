import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../agents/agent.js';
import { sessions } from '../agents/service.js';
import type { Engine } from '../engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import { runStream } from '../runtime/pass/history.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import type { WorkflowService } from '../workflows/service.js';
import { storedWorkflows } from '../app/workflows.js';
import { mount } from './app.js';
import { controlRoutes } from './routes/control.js';
import { sessionRoutes } from './routes/sessions.js';
import { workflowRoutes } from './routes/workflows.js';

const approval = workflow('approval', async (ctx, input: { user: string }) => {
  await ctx.step('ask', async () => input.user);
  const answer = await ctx.waitForEvent<{ ok: boolean }>('decision');
  return { user: input.user, ok: answer?.ok ?? false };
});

const slow = workflow('slow', async (ctx) => ctx.sleep('nap', '1h'));

describe.each(backends)('runs controlled over HTTP on %s', (backend) => {
  let engine: Engine;
  let service: WorkflowService;
  let app: Hono;
  let close: () => Promise<void>;
  let silent: Server;
  let silentUrl: string;

  beforeEach(async () => {
    // answers nothing: an http_request step to it runs until it is cancelled
    silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hold`;
    const t = await testEngine(backend, { workflows: [approval, slow], pollMs: 100 });
    engine = t.engine;
    service = storedWorkflows(engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    const agents = sessions(engine, engine.store, {
      agents: [
        defineAgent('forever', {
          background: (_i, { signal }) =>
            new Promise((_r, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
        }),
      ],
    });
    app = mount(new Hono(), [...controlRoutes(engine), ...workflowRoutes(service), ...sessionRoutes(agents)]);
    close = async () => {
      silent.closeAllConnections();
      silent.close();
      await t.close();
    };
  });
  afterEach(() => close());

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
  const status = (id: string, wanted: string) => eventually(async () => (await engine.run(id)).status === wanted);

  it('starts a code workflow, signals it and sees it end; a repeated id or Idempotency-Key starts nothing', async () => {
    const started = await call('POST', '/runs', { workflow: 'approval', input: { user: 'ada' }, id: 'approve-ada' });
    expect(started).toEqual({
      status: 202,
      body: { run_id: 'approve-ada', workflow: 'approval', status: 'pending', duplicate: false },
    });
    expect(
      (await call('POST', '/runs', { workflow: 'approval', input: { user: 'other' }, id: 'approve-ada' })).body,
    ).toMatchObject({ run_id: 'approve-ada', duplicate: true });

    const keyed = await call(
      'POST',
      '/runs',
      { workflow: 'approval', input: { user: 'bob' } },
      { 'idempotency-key': 'bob-1' },
    );
    const again = await call(
      'POST',
      '/runs',
      { workflow: 'approval', input: { user: 'bob' } },
      { 'idempotency-key': 'bob-1' },
    );
    expect(again.body).toEqual({ ...keyed.body, duplicate: true, status: again.body.status });
    expect(keyed.body.run_id).toMatch(/^run_/);

    await status('approve-ada', 'waiting');
    const signal = { name: 'decision', payload: { ok: true }, idempotency_key: 'd-1' };
    expect(await call('POST', '/runs/approve-ada/signal', signal)).toEqual({
      status: 202,
      body: { run_id: 'approve-ada', name: 'decision' },
    });
    await status('approve-ada', 'success');
    expect((await engine.run('approve-ada')).output).toEqual({ user: 'ada', ok: true });
    // the run has ended: nothing waits for a signal, and there is nothing to cancel
    expect((await call('POST', '/runs/approve-ada/signal', signal)).status).toBe(409);
    expect((await call('POST', '/runs/approve-ada/cancel')).status).toBe(409);
  });

  it('signal-with-start starts the run when it does not exist and signals it; then signals the run it finds', async () => {
    const start = { workflow: 'approval', input: { user: 'ada' } };
    const first = await call('POST', '/runs/sws-1/signal', { name: 'decision', payload: { ok: true }, start });
    expect(first).toEqual({ status: 202, body: { run_id: 'sws-1', name: 'decision', started: true } });
    expect(await engine.start(approval, { user: 'x' }, { id: 'sws-1' }).then((r) => r.result())).toEqual({
      user: 'ada',
      ok: true,
    });
    // one started and one found, however the two race: the run is started once and both signals are journaled
    const [a, b] = await Promise.all(
      [1, 2].map((n) => call('POST', '/runs/sws-2/signal', { name: 'decision', payload: { ok: n === 1 }, start })),
    );
    expect([a!.body.started, b!.body.started].sort()).toEqual([false, true]);
    const events = await engine.journal.readStream(runStream('sws-2'));
    expect(events.filter((e) => e.type === RUN_EVENT.runStarted)).toHaveLength(1);
    expect(events.filter((e) => e.type === RUN_EVENT.signalSent)).toHaveLength(2);
    // an ended run, or a run of another workflow under the id: 409, and nothing is journaled
    const ended = await call('POST', '/runs/sws-1/signal', { name: 'decision', start });
    expect(ended.status).toBe(409);
    await engine.start(slow, {}, { id: 'sws-3' });
    const wrong = await call('POST', '/runs/sws-3/signal', { name: 'decision', start });
    expect(wrong.status).toBe(409);
    const signals = async (id: string) =>
      (await engine.journal.readStream(runStream(id))).filter((e) => e.type === RUN_EVENT.signalSent).length;
    expect([await signals('sws-1'), await signals('sws-3')]).toEqual([1, 0]);
    const other = await call('POST', '/runs/sws-2/signal', { name: 'x', start: { workflow: 'nope' } });
    expect(other.status).toBe(400);
    expect(other.body.error.problems[0].path).toBe('start.workflow');
  });

  it('answers a bad start with the field: unknown or built-in workflow, a stray field, an id of another workflow', async () => {
    const unknown = await call('POST', '/runs', { workflow: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.problems[0]).toMatchObject({
      path: 'workflow',
      message: expect.stringMatching(/no code workflow is named 'nope' \(registered: approval, slow\)/),
    });
    expect((await call('POST', '/runs', { workflow: 'runledger.stored' })).body.error.message).toMatch(
      /POST \/workflows\/\{id\}\/execute/,
    );
    expect((await call('POST', '/runs', { workflow: 'approval', inptu: {} })).status).toBe(400);
    expect((await call('POST', '/runs', {})).body.error.problems[0].path).toBe('workflow');
    const wf = await service.definitions.create({
      name: 'one',
      steps: [{ id: 'a', type: 'log', config: { message: 'hi' } }],
    });
    const { execution_id } = await service.executions.execute(wf.id);
    expect((await call('POST', '/runs', { workflow: 'approval', id: execution_id })).status).toBe(409);
    expect((await call('POST', '/runs/nope/cancel')).status).toBe(404);
    expect((await call('POST', '/runs/nope/signal', { name: 'x' })).status).toBe(404);
    expect((await call('POST', '/runs/approve-x/signal', { payload: 1 })).body.error.problems[0].path).toBe('name');
  });

  it('cancels a run of every kind: a code run, a stored execution, an agent session', async () => {
    await call('POST', '/runs', { workflow: 'approval', input: { user: 'cy' }, id: 'cancel-me' });
    await status('cancel-me', 'waiting');
    expect(await call('POST', '/runs/cancel-me/cancel')).toEqual({
      status: 202,
      body: { run_id: 'cancel-me', status: 'cancelling' },
    });
    await status('cancel-me', 'cancelled');

    const wf = await service.definitions.create({
      name: 'slow',
      steps: [{ id: 'hold', type: 'http_request', config: { method: 'GET', url: silentUrl } }],
    });
    const { execution_id } = await service.executions.execute(wf.id);
    await eventually(async () => (await engine.run(execution_id)).steps[0]?.status === 'running');
    expect((await call('POST', `/runs/${execution_id}/cancel`)).status).toBe(202);
    await status(execution_id, 'cancelled');
    expect((await service.executions.get(wf.id, execution_id)).status).toBe('cancelled');

    const session = await call('POST', '/sessions', { agent: 'forever', session_id: 'ses-cancel' });
    expect(session.status).toBe(202);
    await status('ses-cancel', 'running');
    expect((await call('POST', '/runs/ses-cancel/cancel')).status).toBe(202);
    await status('ses-cancel', 'cancelled');
    expect((await call('GET', '/sessions/ses-cancel')).body).toMatchObject({
      status: 'failed',
      last_event: 'SESSION_FAILED',
    });
  });

  it('journals the reason a cancel gives, and names a bad one', async () => {
    await call('POST', '/runs', { workflow: 'approval', input: { user: 'di' }, id: 'cancel-why' });
    await status('cancel-why', 'waiting');
    expect((await call('POST', '/runs/cancel-why/cancel', { reason: '' })).body.error.problems[0].path).toBe('reason');
    expect((await call('POST', '/runs/cancel-why/cancel', { reason: 'ordered twice' })).status).toBe(202);
    await status('cancel-why', 'cancelled');
    const events = await engine.journal.readStream(runStream('cancel-why'));
    expect(events.find((e) => e.type === RUN_EVENT.runCancelRequested)?.data).toEqual({ reason: 'ordered twice' });
  });
});
