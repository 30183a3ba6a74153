import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../engine.js';
import { ConflictError, ValidationError } from '../errors.js';
import { workflow } from '../runtime/workflow.js';
import { mount } from '../server/app.js';
import { openapi } from '../server/openapi.js';
import { sessionRoutes } from '../server/routes/sessions.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import type { SessionEventType } from './lifecycle.js';
import { ClientError } from './sample.js';
import { sessions, type SessionService } from './service.js';

const HAPPY: SessionEventType[] = [
  'SESSION_INITIATED',
  'AGENT_INVOCATION_STARTED',
  'AGENT_INVOCATION_SUCCEEDED',
  'AGENT_ENTRYPOINT_STARTED',
  'AGENT_BACKGROUND_TASK_STARTED',
  'AGENT_BACKGROUND_TASK_COMPLETED',
];
const THROTTLED = 'ClientError: ThrottlingException - Rate exceeded';

interface Invocation {
  path: string;
  headers: IncomingHttpHeaders;
  body: { session_id: string; agent: string; input: unknown; report_url: string };
}

describe.each(backends)('agent sessions on $name', (backend) => {
  let engine: Engine;
  let service: SessionService;
  let app: Hono;
  let agentServer: Server;
  let invocations: Invocation[];
  let reportAnswers: number[];
  let backgroundRuns: string[];
  let aborted: unknown[];
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const start = async (agent: string, input: unknown = {}) => {
    const res = await call('POST', '/sessions', { agent, input });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body.session_id as string;
  };
  const ended = (id: string, timeoutMs = 10_000) =>
    eventually(async () => {
      const { body } = await call('GET', `/sessions/${id}`);
      return body.status === 'success' || body.status === 'failed' ? body : undefined;
    }, timeoutMs);
  const events = async (id: string) =>
    (await call('GET', `/sessions/${id}/events`)).body.events as Array<{
      type: SessionEventType;
      timestamp: string;
      error_message?: string;
    }>;
  const types = async (id: string) => (await events(id)).map((e) => e.type);
  const report = (id: string, body: unknown) => call('POST', `/sessions/${id}/report`, body);
  /**
   * The session's run waits for the report and no pass of it is running. Reports and cancellations
   * in these tests wait for that: on PostgreSQL a signal that commits while the pass suspending
   * the run schedules its timer wake-up is queued behind that wake-up (Runtime.wake's reschedule
   * does not see the other's uncommitted task), so it would be seen only at the maximum wait.
   */
  const suspended = (id: string) =>
    eventually(async () => {
      if ((await engine.run(id)).status !== 'waiting') return false;
      const running = await engine.store.taskList({ queue: 'runledger.runs', state: 'running', limit: 1000 });
      return !running.some((task) => task.orderingKey === id);
    });

  beforeEach(async () => {
    invocations = [];
    reportAnswers = [];
    backgroundRuns = [];
    aborted = [];
    // An HTTP agent on loopback: it acknowledges, then (on /ack*) reports through the API, in process.
    agentServer = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        const invocation: Invocation = { path: req.url ?? '', headers: req.headers, body: JSON.parse(text) };
        invocations.push(invocation);
        if (invocation.path === '/500')
          return void res
            .writeHead(500, { 'content-type': 'application/json' })
            .end('{"message":"agent runtime unavailable"}');
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":true}');
        const outcome =
          invocation.path === '/ack'
            ? { status: 'success' }
            : invocation.path === '/ack-fail'
              ? { status: 'failed', error_message: 'NoCredentialsError: Unable to locate credentials' }
              : null;
        if (!outcome) return;
        void suspended(invocation.body.session_id).then(() => {
          const request = new Request(invocation.body.report_url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(outcome),
          });
          return Promise.resolve(app.fetch(request)).then((answer) => reportAnswers.push(answer.status));
        });
      });
    });
    await new Promise<void>((resolve) => agentServer.listen(0, '127.0.0.1', resolve));
    const agentUrl = `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}`;

    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    const agents = [
      defineAgent('throttled', {
        entrypoint: async () => {
          throw new ClientError('ThrottlingException - Rate exceeded');
        },
        background: async (_input, { sessionId }) => void backgroundRuns.push(sessionId),
      }),
      defineAgent('stuck', {
        background: (_input, { signal }) =>
          new Promise((_resolve, reject) =>
            signal.addEventListener('abort', () => {
              aborted.push(signal.reason);
              reject(signal.reason);
            }),
          ),
        maxWait: 300,
      }),
      defineAgent('remote', {
        url: `${agentUrl}/ack`,
        maxWait: '10s',
        headers: { authorization: 'Bearer agent-token' },
      }),
      defineAgent('remote-fails', { url: `${agentUrl}/ack-fail` }),
      defineAgent('remote-500', { url: `${agentUrl}/500` }),
      defineAgent('remote-silent', { url: `${agentUrl}/silent`, maxWait: 400 }),
      defineAgent('remote-slow', { url: `${agentUrl}/silent`, maxWait: '1h' }),
    ];
    service = sessions(engine, engine.store, { agents, allow: ['127.0.0.1'], reportBaseUrl: 'http://api/' });
    app = mount(new Hono(), sessionRoutes(service));
    close = async () => {
      agentServer.closeAllConnections();
      agentServer.close();
      await t.close();
    };
  });
  afterEach(() => close());

  it('runs sample-agent: 202 pending at once, then the six lifecycle events in order, success', async () => {
    const started = await call('POST', '/sessions', { agent: 'sample-agent', input: { topic: 'ledgers' } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      session_id: expect.stringMatching(/^ses_/),
      agent: 'sample-agent',
      status: 'pending',
      input: { topic: 'ledgers' },
      error_message: null,
      events_count: 1,
    });
    const id = started.body.session_id;
    const session = await ended(id);
    expect(session).toMatchObject({
      session_id: id,
      status: 'success',
      error_message: null,
      events_count: 6,
      last_event: 'AGENT_BACKGROUND_TASK_COMPLETED',
    });
    expect(Date.parse(session.updated_at)).toBeGreaterThanOrEqual(Date.parse(session.created_at));
    const journal = await events(id);
    expect(journal.map((e) => e.type)).toEqual(HAPPY);
    for (const e of journal) {
      expect(e.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(e).not.toHaveProperty('error_message');
    }
    const times = journal.map((e) => Date.parse(e.timestamp));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    // the background task is the 200 ms of work between its start and its completion
    expect(times[5]! - times[4]!).toBeGreaterThanOrEqual(180);
    expect(
      await eventually(async () => ((await engine.run(id)).status === 'success' ? engine.run(id) : undefined)),
    ).toMatchObject({ workflow: 'runledger.session' });
  });

  it('fails on a background task that throws, with its error type and message', async () => {
    const id = await start('sample-agent', { fail: true });
    expect(await ended(id)).toMatchObject({
      status: 'failed',
      error_message: THROTTLED,
      last_event: 'AGENT_BACKGROUND_TASK_FAILED',
    });
    const fromEvent = await start('sample-agent', { session_id: 'evt-1', detail: { fail: true } });
    expect(await ended(fromEvent)).toMatchObject({ status: 'failed', error_message: THROTTLED });
    const journal = await events(id);
    expect(journal.map((e) => e.type)).toEqual([...HAPPY.slice(0, 5), 'AGENT_BACKGROUND_TASK_FAILED']);
    expect(journal.at(-1)!.error_message).toBe(THROTTLED);
    expect(journal.slice(0, 5).every((e) => e.error_message === undefined)).toBe(true);
  });

  it('records AGENT_ENTRYPOINT_FAILED when the entrypoint throws, and never starts the background task', async () => {
    const id = await start('throttled');
    expect(await ended(id)).toMatchObject({ status: 'failed', error_message: THROTTLED, events_count: 5 });
    const journal = await events(id);
    expect(journal.map((e) => e.type)).toEqual([
      'SESSION_INITIATED',
      'AGENT_INVOCATION_STARTED',
      'AGENT_INVOCATION_SUCCEEDED',
      'AGENT_ENTRYPOINT_STARTED',
      'AGENT_ENTRYPOINT_FAILED',
    ]);
    expect(journal.at(-1)).toMatchObject({ type: 'AGENT_ENTRYPOINT_FAILED', error_message: THROTTLED });
    expect(backgroundRuns).toEqual([]);
  });

  it('invokes an HTTP agent, which acknowledges and later reports through the route', async () => {
    const id = await start('remote', { question: 42 });
    expect(await ended(id)).toMatchObject({ status: 'success', events_count: 6 });
    expect(await types(id)).toEqual(HAPPY);
    expect(invocations).toHaveLength(1);
    expect(invocations[0]!.body).toEqual({
      session_id: id,
      agent: 'remote',
      input: { question: 42 },
      report_url: `http://api/sessions/${id}/report`,
      session_url: `http://api/sessions/${id}`,
      lease_token: expect.stringMatching(/^lt_/),
    });
    expect(invocations[0]!.headers.authorization).toBe('Bearer agent-token');
    expect(invocations[0]!.headers['idempotency-key']).toEqual(expect.stringContaining(id));
    expect(reportAnswers).toEqual([202]);

    const failing = await start('remote-fails');
    expect(await ended(failing)).toMatchObject({
      status: 'failed',
      error_message: 'NoCredentialsError: Unable to locate credentials',
    });
    expect(await types(failing)).toEqual([...HAPPY.slice(0, 5), 'AGENT_BACKGROUND_TASK_FAILED']);
  });

  it('records AGENT_INVOCATION_FAILED when the HTTP agent answers 500, and calls it once', async () => {
    const id = await start('remote-500');
    const session = await ended(id);
    expect(session).toMatchObject({ status: 'failed', events_count: 3 });
    expect(session.error_message).toMatch(
      /^InvocationError: .*failed: 500 Internal Server Error.*agent runtime unavailable/,
    );
    const journal = await events(id);
    expect(journal.map((e) => e.type)).toEqual([
      'SESSION_INITIATED',
      'AGENT_INVOCATION_STARTED',
      'AGENT_INVOCATION_FAILED',
    ]);
    expect(journal[2]!.error_message).toBe(session.error_message);
    expect(invocations).toHaveLength(1);
  });

  it('fails a session whose agent never reports with SESSION_TIMED_OUT at its maximum wait; a late report is 409', async () => {
    const id = await start('remote-silent');
    const session = await ended(id);
    expect(session).toMatchObject({ status: 'failed', last_event: 'SESSION_TIMED_OUT' });
    expect(session.error_message).toBe(
      "TimeoutError: agent 'remote-silent' did not finish within its maximum wait of 400 ms",
    );
    const journal = await events(id);
    expect(journal.map((e) => e.type)).toEqual([...HAPPY.slice(0, 5), 'SESSION_TIMED_OUT']);
    const waited = Date.parse(journal[5]!.timestamp) - Date.parse(journal[2]!.timestamp);
    expect(waited).toBeGreaterThanOrEqual(380);
    const late = await report(id, { status: 'COMPLETED' });
    expect(late.status).toBe(409);
    expect(late.body.error.message).toMatch(/has already ended: SESSION_TIMED_OUT/);
    expect((await call('GET', `/sessions/${id}`)).body.status).toBe('failed');
  });

  it('times out a TypeScript agent that never settles, firing its signal', async () => {
    const id = await start('stuck');
    expect(await ended(id)).toMatchObject({
      status: 'failed',
      last_event: 'SESSION_TIMED_OUT',
      error_message: expect.stringMatching(/^TimeoutError: agent 'stuck'/),
    });
    expect(await types(id)).toEqual([...HAPPY.slice(0, 5), 'SESSION_TIMED_OUT']);
    expect(aborted).toHaveLength(1);
    expect((aborted[0] as Error).name).toBe('TimeoutError');
  });

  // On PostgreSQL the database keeps its own clock while this process's Date.now is 10 minutes off:
  // a session's maximum wait, counted from a database timestamp, must neither end at once (ahead)
  // nor last 10 minutes more (behind). On SQLite the database's clock is the process's own.
  it.each([
    ['ahead', 600_000],
    ['behind', -600_000],
  ])(
    'times the maximum wait of a session on the database clock with this process 10 minutes %s',
    async (_label, skew) => {
      const wall = Date.now.bind(Date);
      vi.spyOn(Date, 'now').mockImplementation(() => wall() + skew);
      try {
        expect(await ended(await start('remote'))).toMatchObject({ status: 'success' });
        const silent = await start('remote-silent');
        expect(await ended(silent)).toMatchObject({ status: 'failed', last_event: 'SESSION_TIMED_OUT' });
        const journal = await events(silent);
        expect(Date.parse(journal[5]!.timestamp) - Date.parse(journal[2]!.timestamp)).toBeGreaterThanOrEqual(380);
        expect(await ended(await start('stuck'))).toMatchObject({ status: 'failed', last_event: 'SESSION_TIMED_OUT' });
      } finally {
        vi.restoreAllMocks();
      }
    },
  );

  it('takes the first report: a repeat is idempotent, a different one or one to an unknown or TypeScript session is refused', async () => {
    const id = await start('remote-slow');
    await suspended(id);
    const first = await report(id, { status: 'success' });
    expect(first).toEqual({ status: 202, body: { session_id: id, status: 'success', duplicate: false } });
    // COMPLETED, the spelling before 0.2, is the same report
    expect((await report(id, { status: 'COMPLETED' })).body).toEqual({
      session_id: id,
      status: 'success',
      duplicate: true,
    });
    expect((await report(id, { status: 'FAILED', error_message: 'Error: changed my mind' })).status).toBe(409);
    expect(await ended(id)).toMatchObject({ status: 'success', events_count: 6 });
    // after the end: the agent retrying the same report still gets its answer; anything else is 409
    expect(await report(id, { status: 'COMPLETED' })).toEqual({
      status: 202,
      body: { session_id: id, status: 'success', duplicate: true },
    });
    expect((await report(id, { status: 'FAILED' })).status).toBe(409);
    expect(await types(id)).toEqual(HAPPY);

    expect((await report('ses_unknown', { status: 'COMPLETED' })).status).toBe(404);
    const bad = await report(id, { status: 'DONE' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('status');
    const code = await start('sample-agent');
    expect((await report(code, { status: 'COMPLETED' })).status).toBe(409);

    // two different reports racing: exactly one is taken
    const raced = await start('remote-slow');
    await suspended(raced);
    const answers = await Promise.all([
      report(raced, { status: 'COMPLETED' }),
      report(raced, { status: 'FAILED', error_message: 'ClientError: boom' }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    const winner = answers.find((a) => a.status === 202)!.body.status;
    expect((await ended(raced)).status).toBe(winner);
  });

  it('filters events by type, and names a bad filter', async () => {
    const id = await start('sample-agent');
    await ended(id);
    const filtered = await call('GET', `/sessions/${id}/events?status=AGENT_INVOCATION_STARTED`);
    expect(filtered.status).toBe(200);
    expect(filtered.body).toMatchObject({ session_id: id, count: 1, events: [{ type: 'AGENT_INVOCATION_STARTED' }] });
    expect((await call('GET', `/sessions/${id}/events?status=AGENT_BACKGROUND_TASK_FAILED`)).body).toMatchObject({
      count: 0,
      events: [],
    });
    const bad = await call('GET', `/sessions/${id}/events?status=RUNNING`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('query.status');
    await expect(service.events(id, { status: 'RUNNING' })).rejects.toThrow(ValidationError);
    expect((await call('GET', '/sessions/ses_nope/events')).status).toBe(404);
    expect((await call('GET', '/sessions/ses_nope')).status).toBe(404);
  });

  it("answers the brief's polling query: order=desc&limit=N is the newest N, newest first; the default stays oldest first", async () => {
    const id = await start('sample-agent');
    await ended(id);
    const newest = await call('GET', `/sessions/${id}/events?order=desc&limit=2`);
    expect(newest.status).toBe(200);
    expect(newest.body).toMatchObject({ session_id: id, count: 2 });
    expect(newest.body.events.map((e: { type: string }) => e.type)).toEqual([
      'AGENT_BACKGROUND_TASK_COMPLETED',
      'AGENT_BACKGROUND_TASK_STARTED',
    ]);
    expect(
      (await call('GET', `/sessions/${id}/events?order=desc&limit=20`)).body.events.map(
        (e: { type: string }) => e.type,
      ),
    ).toEqual([...HAPPY].reverse());
    expect(
      (await call('GET', `/sessions/${id}/events?limit=1`)).body.events.map((e: { type: string }) => e.type),
    ).toEqual(['SESSION_INITIATED']);
    expect(await types(id)).toEqual(HAPPY);
    expect((await call('GET', `/sessions/${id}/events?order=desc&status=AGENT_INVOCATION_STARTED`)).body).toMatchObject(
      { count: 1, events: [{ type: 'AGENT_INVOCATION_STARTED' }] },
    );
    for (const [query, field] of [
      ['limit=0', 'query.limit'],
      ['limit=501', 'query.limit'],
      ['order=newest', 'query.order'],
    ]) {
      const bad = await call('GET', `/sessions/${id}/events?${query}`);
      expect(bad.status).toBe(400);
      expect(bad.body.error.problems[0].path).toBe(field);
    }
    await expect(service.events(id, { limit: 0 })).rejects.toThrow(ValidationError);
  });

  it('starts sessions for rules idempotently by key, by input.session_id, and only when the caller commits', async () => {
    expect(service.has('sample-agent')).toBe(true);
    expect(service.has('nope')).toBe(false);
    const racing = await Promise.all(
      [1, 2, 3].map(() => service.start({ agent: 'sample-agent', input: { n: 1 }, key: 'rule-1:event-7' })),
    );
    const id = racing[0]!.run_id;
    expect(id).toMatch(/^ses_[0-9a-f]{32}$/);
    expect(racing.every((r) => r.run_id === id)).toBe(true);
    expect(await ended(id)).toMatchObject({ status: 'success', input: { n: 1 } });
    expect(await types(id)).toEqual(HAPPY);

    expect(
      await service.start({ agent: 'sample-agent', input: { session_id: 'evt-abc-123' }, key: 'ignored' }),
    ).toEqual({ run_id: 'evt-abc-123' });
    expect((await ended('evt-abc-123')).status).toBe('success');
    await expect(service.start({ agent: 'remote', input: { session_id: 'evt-abc-123' }, key: 'k' })).rejects.toThrow(
      ConflictError,
    );
    await expect(service.start({ agent: 'nope', input: {}, key: 'k' })).rejects.toThrow(ValidationError);

    const rolledBack = await engine.store
      .transaction(async (tx) => {
        await service.start({ agent: 'sample-agent', input: { session_id: 'never' }, key: 'k', tx });
        throw new Error('the rule failed');
      })
      .catch((e: Error) => e.message);
    expect(rolledBack).toBe('the rule failed');
    expect((await call('GET', '/sessions/never')).status).toBe(404);
    await expect(engine.run('never')).rejects.toThrow(/not found/);
  });

  it('answers POST /sessions idempotently by session_id and Idempotency-Key, and refuses what it cannot start', async () => {
    const first = await call('POST', '/sessions', { agent: 'sample-agent', session_id: 'order-9' });
    const again = await call('POST', '/sessions', { agent: 'sample-agent', session_id: 'order-9' });
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.body.session_id).toBe('order-9');
    expect((await call('POST', '/sessions', { agent: 'remote', session_id: 'order-9' })).status).toBe(409);
    const keyed = await Promise.all(
      [1, 2].map(() => call('POST', '/sessions', { agent: 'sample-agent' }, { 'idempotency-key': 'abc' })),
    );
    expect(keyed[0]!.body.session_id).toBe(keyed[1]!.body.session_id);
    const unknown = await call('POST', '/sessions', { agent: 'nope' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.problems[0].path).toBe('agent');
    expect(
      (await call('POST', '/sessions', { agent: 'sample-agent', session_id: 'bad id/..' })).body.error.problems[0].path,
    ).toBe('session_id');
    const plain = workflow('plain', async () => null);
    engine.register(plain);
    await engine.start(plain, {}, { id: 'plain-run' });
    const taken = await call('POST', '/sessions', { agent: 'sample-agent', session_id: 'plain-run' });
    expect(taken.status).toBe(409);
    expect(taken.body.error.message).toMatch(/taken by a run of workflow 'plain'/);
    await ended('order-9');
    expect(await types('order-9')).toEqual(HAPPY);
    const paths = openapi(sessionRoutes(service), 'test').paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths).sort()).toEqual([
      '/healthz',
      '/sessions',
      '/sessions/{id}',
      '/sessions/{id}/events',
      '/sessions/{id}/report',
    ]);
    expect(paths['/sessions/{id}/events']!.get).toMatchObject({
      parameters: expect.arrayContaining([expect.objectContaining({ name: 'status', in: 'query' })]),
    });
  });

  it('retries a report while the store is briefly unreachable', async () => {
    const id = await start('remote-slow');
    await suspended(id);
    const store = engine.store;
    const original = store.projectionGet.bind(store);
    let outages = 0;
    store.projectionGet = async (p) => {
      if (p.name === 'session' && outages < 2) {
        outages += 1;
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      }
      return original(p);
    };
    try {
      expect((await report(id, { status: 'COMPLETED' })).status).toBe(202);
    } finally {
      store.projectionGet = original;
    }
    expect(outages).toBe(2);
    expect(await ended(id)).toMatchObject({ status: 'success', last_event: 'AGENT_BACKGROUND_TASK_COMPLETED' });
  });

  it('ends a session whose run is cancelled with SESSION_FAILED, and refuses any event after the end', async () => {
    const id = await start('remote-slow');
    await suspended(id);
    await engine.cancel(id);
    expect(await ended(id)).toMatchObject({
      status: 'failed',
      last_event: 'SESSION_FAILED',
      error_message: expect.stringMatching(/^CancelledError: /),
    });
    expect(await types(id)).toEqual([...HAPPY.slice(0, 5), 'SESSION_FAILED']);
    expect((await report(id, { status: 'COMPLETED' })).status).toBe(409);

    await expect(
      engine.journal.append(`session:${id}`, [{ type: 'AGENT_BACKGROUND_TASK_COMPLETED', data: {} }]),
    ).rejects.toThrow(ConflictError);
    // the slot's key returns the event first written in it, as a re-run step sees it
    const again = await engine.journal.append(`session:${id}`, [{ type: 'AGENT_BACKGROUND_TASK_STARTED', data: {} }], {
      idempotencyKey: `session:${id}:entered`,
    });
    expect(again).toMatchObject({ duplicate: true, events: [{ type: 'AGENT_BACKGROUND_TASK_STARTED', version: 5 }] });
    expect((await call('GET', `/sessions/${id}`)).body).toMatchObject({ status: 'failed', events_count: 6 });
  });
});
