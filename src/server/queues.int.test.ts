import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkJournal } from '../../chaos/check.js';
import { backends } from '../testing/backends.js';
import { startServer, type Server } from './start.js';

describe.each(backends)('the task protocol on $name', (backend) => {
  let server: Server;
  let location: string;
  let n = 0;
  /** A queue of its own per test: tests do not see each other's tasks. */
  const fresh = () => `q${++n}`;
  const call = async (path: string, body?: unknown, headers: Record<string, string> = {}, init: RequestInit = {}) => {
    const response = await fetch(`${server.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...init,
    });
    return {
      status: response.status,
      protocol: response.headers.get('runledger-protocol'),
      body: (await response.json()) as any,
    };
  };
  const enqueue = async (queue: string, body: unknown) => (await call(`/queues/${queue}/tasks`, body)).body;
  const claim = async (queue: string, body: Record<string, unknown>) =>
    (await call(`/queues/${queue}/claim`, body)).body.tasks as any[];
  const types = async (id: string) =>
    (await call(`/tasks/${id}/events`)).body.events.map((e: { type: string }) => e.type);

  beforeAll(async () => {
    location = await backend.create();
    server = await startServer({
      database: location,
      port: 0,
      workers: false,
      pollMs: 1000,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-queues-')),
      logger: pino({ level: 'silent' }),
    });
  });
  afterAll(() => server.close());

  it('enqueues one task (201), answers a repeated idempotency key with the first (200, nothing written), and a batch in order', async () => {
    const q = fresh();
    const first = await call(`/queues/${q}/tasks`, {
      payload: { to: 'a@b.c' },
      idempotency_key: 'welcome-1',
      priority: 5,
      max_attempts: 3,
    });
    expect(first).toMatchObject({
      status: 201,
      protocol: '1',
      body: {
        created: true,
        task: {
          queue: q,
          state: 'ready',
          payload: { to: 'a@b.c' },
          attempts: 0,
          max_attempts: 3,
          priority: 5,
          idempotency_key: 'welcome-1',
          ordering_key: null,
          last_error: null,
        },
      },
    });
    const again = await call(`/queues/${q}/tasks`, { payload: { to: 'other' }, idempotency_key: 'welcome-1' });
    expect(again).toMatchObject({
      status: 200,
      body: { created: false, task: { id: first.body.task.id, payload: { to: 'a@b.c' } } },
    });
    expect(await types(first.body.task.id)).toEqual(['task.enqueued']);
    const batch = await call(`/queues/${q}/tasks`, {
      tasks: [{ payload: 1 }, { payload: 2, delay: '1h' }, { payload: 3, idempotency_key: 'welcome-1' }],
    });
    expect(batch.status).toBe(201);
    expect(batch.body.tasks.map((t: any) => [t.task.payload, t.created])).toEqual([
      [1, true],
      [2, true],
      [{ to: 'a@b.c' }, false],
    ]);
    expect(Date.parse(batch.body.tasks[1].task.run_at) - Date.now()).toBeGreaterThan(3_500_000);
  });

  it('claims up to max, one task at a time per ordering key, each with its own lease', async () => {
    const q = fresh();
    await enqueue(q, {
      tasks: [
        { payload: 'k1', ordering_key: 'k' },
        { payload: 'k2', ordering_key: 'k' },
        { payload: 'a' },
        { payload: 'b' },
      ],
    });
    const got = await claim(q, { worker: 'w1', max: 10 });
    expect(got.map((t) => t.payload).sort()).toEqual(['a', 'b', 'k1']);
    for (const t of got) expect(t).toMatchObject({ state: 'running', attempts: 1, lease_token: expect.any(String) });
    expect(Date.parse(got[0].lease_expires_at)).toBeGreaterThan(Date.now() + 20_000);
    expect(await claim(q, { worker: 'w2', max: 10 })).toEqual([]);
    const k1 = got.find((t) => t.payload === 'k1');
    expect((await call(`/tasks/${k1.id}/complete`, { lease_token: k1.lease_token, result: { ok: true } })).status).toBe(
      200,
    );
    expect((await claim(q, { worker: 'w2', max: 10 })).map((t) => t.payload)).toEqual(['k2']);
    const one = await claim(fresh(), { worker: 'w3' });
    expect(one).toEqual([]);
  });

  it('a waiting claim returns a task as soon as it is enqueued, and nothing once the wait ran out', async () => {
    const q = fresh();
    const started = performance.now();
    expect(await claim(q, { worker: 'w', wait: '400ms' })).toEqual([]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    const waiting = claim(q, { worker: 'w', wait: '30s' });
    await sleep(300);
    const enqueuedAt = performance.now();
    const { task } = await enqueue(q, { payload: 'wake' });
    const [got] = await waiting;
    expect(got.id).toBe(task.id);
    // woken by the queue's notification, not by the poll (1 s)
    expect(performance.now() - enqueuedAt).toBeLessThan(400);
  });

  it('a claim whose client went away stops waiting and holds nothing', async () => {
    const q = fresh();
    const gone = new AbortController();
    const waiting = call(`/queues/${q}/claim`, { worker: 'gone', wait: '30s' }, {}, { signal: gone.signal }).catch(
      (e) => e,
    );
    await sleep(200);
    gone.abort();
    await waiting;
    await sleep(200);
    await enqueue(q, { payload: 'x' });
    await sleep(200);
    expect((await claim(q, { worker: 'here' })).map((t) => [t.payload, t.attempts])).toEqual([['x', 1]]);
  });

  it('heartbeat extends the lease; complete stores the result and journals task.completed with the remote worker', async () => {
    const q = fresh();
    await enqueue(q, { payload: 'hb' });
    const [t] = await claim(q, { worker: 'py-1', lease: '2s' });
    expect(Date.parse(t.lease_expires_at) - Date.now()).toBeLessThan(2_500);
    const beat = await call(`/tasks/${t.id}/heartbeat`, { lease_token: t.lease_token, lease: '1m' });
    expect(beat).toMatchObject({ status: 200, protocol: '1' });
    expect(Date.parse(beat.body.lease_expires_at) - Date.now()).toBeGreaterThan(50_000);
    await sleep(2_300);
    const done = await call(`/tasks/${t.id}/complete`, { lease_token: t.lease_token, result: { sent: true } });
    expect(done).toMatchObject({
      status: 200,
      body: { task: { id: t.id, state: 'completed', result: { sent: true }, attempts: 1 } },
    });
    const events = (await call(`/tasks/${t.id}/events`)).body.events;
    expect(events.map((e: any) => e.type)).toEqual(['task.enqueued', 'task.completed']);
    expect(events[1].data).toMatchObject({ attempt: 1, workerId: 'remote:py-1' });
    expect((await call(`/tasks/${t.id}/complete`, { lease_token: t.lease_token, result: 2 })).body.error.code).toBe(
      'lease_lost',
    );
  });

  it('fail: retryable → ready after backoff; not retryable → dead, in the DLQ and redrivable; attempts used up → dead', async () => {
    const q = fresh();
    await enqueue(q, {
      tasks: [{ payload: 'retry', max_attempts: 3 }, { payload: 'terminal' }, { payload: 'last', max_attempts: 1 }],
    });
    const got = await claim(q, { worker: 'w', max: 3 });
    const by = (p: string) => got.find((t) => t.payload === p);
    const retried = await call(`/tasks/${by('retry').id}/fail`, {
      lease_token: by('retry').lease_token,
      error: 'smtp 451',
    });
    expect(retried).toMatchObject({
      status: 200,
      body: { task: { state: 'ready', attempts: 1, last_error: 'smtp 451' } },
    });
    // the queue's backoff: 1 s ± 20% after the first attempt
    expect(Date.parse(retried.body.task.run_at) - Date.now()).toBeGreaterThan(500);
    const terminal = await call(`/tasks/${by('terminal').id}/fail`, {
      lease_token: by('terminal').lease_token,
      error: 'bad address',
      retryable: false,
    });
    expect(terminal.body.task).toMatchObject({ state: 'dead', last_error: 'bad address' });
    const last = await call(`/tasks/${by('last').id}/fail`, { lease_token: by('last').lease_token, error: 'again' });
    expect(last.body.task).toMatchObject({ state: 'dead', attempts: 1 });
    expect(await types(by('retry').id)).toEqual(['task.enqueued', 'task.failed']);
    expect(await types(by('last').id)).toEqual(['task.enqueued', 'task.dead']);
    const dlq = (await call(`/dlq?queue=${q}`)).body.tasks.map((t: any) => t.id);
    expect(dlq.sort()).toEqual([by('terminal').id, by('last').id].sort());
    expect((await call(`/dlq/${by('terminal').id}/redrive`, {})).body).toMatchObject({
      state: 'ready',
      redriven: true,
    });
    const soon = await call(`/tasks/${by('retry').id}/fail`, { lease_token: by('retry').lease_token, error: 'twice' });
    expect(soon.body.error.code).toBe('lease_lost');
    // retry_after replaces the backoff
    const [again] = await claim(q, { worker: 'w', max: 1 });
    const later = await call(`/tasks/${again.id}/fail`, {
      lease_token: again.lease_token,
      error: 'busy',
      retry_after: '10m',
    });
    expect(Date.parse(later.body.task.run_at) - Date.now()).toBeGreaterThan(590_000);
  });

  it('a stale token (lease expired, claimed again) gets 409 lease_lost and writes nothing; a vanished worker loses its task to a waiting claim', async () => {
    const q = fresh();
    const { task } = await enqueue(q, { payload: 'once' });
    const [old] = await claim(q, { worker: 'vanished', lease: '1s' });
    // nobody heartbeats: the waiting claim gets the task once the lease ran out
    const started = performance.now();
    const [fresh2] = await claim(q, { worker: 'second', wait: '10s' });
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(fresh2).toMatchObject({ id: task.id, attempts: 2 });
    expect(fresh2.lease_token).not.toBe(old.lease_token);
    const before = await types(task.id);
    expect(before).toEqual(['task.enqueued', 'task.lease_expired']);
    for (const [path, body] of [
      ['complete', { lease_token: old.lease_token, result: 'late' }],
      ['fail', { lease_token: old.lease_token, error: 'late' }],
      ['heartbeat', { lease_token: old.lease_token }],
    ] as const) {
      const stale = await call(`/tasks/${task.id}/${path}`, body);
      expect(stale).toMatchObject({ status: 409, protocol: '1', body: { error: { code: 'lease_lost' } } });
    }
    expect(await types(task.id)).toEqual(before);
    expect(
      (await call(`/tasks/${task.id}/complete`, { lease_token: fresh2.lease_token, result: 'on time' })).body.task,
    ).toMatchObject({ state: 'completed', result: 'on time' });
    expect((await call('/tasks/task_nope/complete', { lease_token: 'lease_x' })).status).toBe(404);
  });

  it('completes a batch in one request, each task fenced on its own: a stale or unknown one is its error and the others complete', async () => {
    const q = fresh();
    await enqueue(q, { tasks: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] });
    const got = await claim(q, { worker: 'batch', max: 3 });
    const completions = [
      { id: got[0].id, lease_token: got[0].lease_token, result: 'one' },
      { id: got[1].id, lease_token: 'lease_stale' },
      { id: 'task_unknown', lease_token: got[0].lease_token },
      { id: got[2].id, lease_token: got[2].lease_token },
    ];
    const answer = await call('/tasks/complete', { completions });
    expect(answer).toMatchObject({ status: 200, protocol: '1' });
    expect(answer.body.results.map((r: any) => [r.id, r.task?.state ?? r.error.code])).toEqual([
      [got[0].id, 'completed'],
      [got[1].id, 'lease_lost'],
      ['task_unknown', 'not_found'],
      [got[2].id, 'completed'],
    ]);
    expect(answer.body.results[0].task.result).toBe('one');
    expect(await types(got[1].id)).toEqual(['task.enqueued']);
    expect(await types(got[2].id)).toEqual(['task.enqueued', 'task.completed']);
    expect((await call('/tasks/complete', { completions: [] })).body.error.problems[0].path).toBe('completions');
  });

  it('settles through another server on the same database what one server handed out; a stale token there is 409 too', async () => {
    const other = await startServer({
      database: location,
      port: 0,
      workers: false,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-queues-')),
      logger: pino({ level: 'silent' }),
    });
    try {
      const q = fresh();
      await enqueue(q, { tasks: [{ payload: 'done elsewhere' }, { payload: 'failed elsewhere' }] });
      const [a, b] = await claim(q, { worker: 'w', max: 2 });
      const there = async (path: string, body: unknown) =>
        (
          await fetch(`${other.url}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).json() as Promise<any>;
      expect((await there(`/tasks/${a.id}/complete`, { lease_token: 'lease_made_up' })).error.code).toBe('lease_lost');
      expect((await there(`/tasks/${a.id}/complete`, { lease_token: a.lease_token, result: 7 })).task).toMatchObject({
        id: a.id,
        state: 'completed',
        result: 7,
        attempts: 1,
        payload: a.payload,
      });
      expect(
        (await there(`/tasks/${b.id}/fail`, { lease_token: b.lease_token, error: 'e', retryable: false })).task,
      ).toMatchObject({ id: b.id, state: 'dead', last_error: 'e' });
      // and back on the server that handed them out: settled, whatever it remembers of the claims
      expect((await call(`/tasks/${a.id}/complete`, { lease_token: a.lease_token, result: 8 })).body.error.code).toBe(
        'lease_lost',
      );
      expect((await call(`/tasks/${b.id}/fail`, { lease_token: b.lease_token, error: 'again' })).body.error.code).toBe(
        'lease_lost',
      );
      expect(await types(a.id)).toEqual(['task.enqueued', 'task.completed']);
      expect(await types(b.id)).toEqual(['task.enqueued', 'task.dead']);
    } finally {
      await other.close();
    }
  });

  it.each([
    ['claim', { max: 1 }, {}, 'worker'],
    ['claim', { worker: 'w', max: 0 }, {}, 'max'],
    ['claim', { worker: 'w', max: 1001 }, {}, 'max'],
    ['claim', { worker: 'w', wait: '2h' }, {}, 'wait'],
    ['claim', { worker: 'w', wait: 'soon' }, {}, 'wait'],
    ['claim', { worker: 'w', lease: '10ms' }, {}, 'lease'],
    ['claim', { worker: 'w' }, { 'runledger-protocol': '2' }, 'runledger-protocol'],
    ['tasks', { payload: 1, delay: '1s', run_at: '2030-01-01T00:00:00Z' }, {}, 'run_at'],
    ['tasks', { idempotency_key: 'x' }, {}, 'payload'],
    ['tasks', { tasks: [{ payload: 1 }, { payload: 2, max_attempts: 0 }] }, {}, 'tasks[1].max_attempts'],
    ['tasks', { tasks: [] }, {}, 'tasks'],
  ])('refuses a bad %s with 400 naming the field (%#)', async (route, body, headers, field) => {
    const q = fresh();
    const answer = await call(`/queues/${q}/${route}`, body, headers);
    expect(answer).toMatchObject({ status: 400, protocol: '1', body: { error: { code: 'validation' } } });
    expect(answer.body.error.problems.map((p: { path: string }) => p.path)).toContain(field);
    expect((await call(`/tasks?queue=${q}`)).body.tasks).toEqual([]);
  });

  it('refuses a bad heartbeat, completion or failure naming the field, and an unknown token with 409', async () => {
    const q = fresh();
    await enqueue(q, { payload: 'x' });
    const [t] = await claim(q, { worker: 'w' });
    expect((await call(`/tasks/${t.id}/complete`, { result: 1 })).body.error.problems[0].path).toBe('lease_token');
    expect(
      (await call(`/tasks/${t.id}/fail`, { lease_token: t.lease_token, error: 'x'.repeat(10_001) })).body.error
        .problems[0].path,
    ).toBe('error');
    expect(
      (await call(`/tasks/${t.id}/heartbeat`, { lease_token: t.lease_token, lease: '2h' })).body.error.problems[0].path,
    ).toBe('lease');
    expect((await call(`/tasks/${t.id}/complete`, { lease_token: 'lease_unknown' })).body.error.code).toBe(
      'lease_lost',
    );
    expect(await types(t.id)).toEqual(['task.enqueued']);
    expect((await call(`/queues/${q}/claim`, { worker: 'w' }, { 'runledger-protocol': '1' })).status).toBe(200);
    expect((await call('/queues/bad%20queue!/claim', { worker: 'w' })).body.error.problems[0].path).toBe('queue');
  });

  it('leaves a journal the checker finds sound: tasks settled remotely move only along the task lifecycle, claims = attempts', async () => {
    const report = await checkJournal(location);
    expect(report.tasks).toBeGreaterThan(10);
    expect(report.problems).toEqual([]);
  });
});
