import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type Server } from '../server/start.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { ApiError, Client, RemoteWorker } from './client.js';

describe.each(backends)('a remote task worker over the client on $name', (backend) => {
  let server: Server;
  let client: Client;
  beforeAll(async () => {
    server = await startServer({
      database: await backend.create(),
      port: 0,
      workers: false,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-remote-')),
      logger: pino({ level: 'silent' }),
    });
    client = new Client({ url: server.url });
  });
  afterAll(() => server.close());

  it('enqueues, claims, heartbeats, fails and completes through the client; a lost lease is ApiError 409 lease_lost', async () => {
    const one = await client.enqueueTask('c1', { n: 1 }, { idempotencyKey: 'k1', maxAttempts: 2 });
    expect(one.created).toBe(true);
    expect((await client.enqueueTask('c1', { n: 2 }, { idempotencyKey: 'k1' })).created).toBe(false);
    const later = await client.enqueueTasks('c1', [{ payload: 'later', delay: '1h' }]);
    expect(later.tasks[0]!.task.payload).toBe('later');
    const [task] = await client.claimTasks('c1', { worker: 'ts', max: 5, wait: '1s' });
    expect(task).toMatchObject({ id: one.task.id, attempts: 1 });
    expect(
      Date.parse((await client.heartbeatTask(task!.id, task!.lease_token, '1m')).lease_expires_at),
    ).toBeGreaterThan(Date.now() + 50_000);
    expect((await client.failTask(task!.id, task!.lease_token, { error: 'once', retryAfter: 0 })).task.state).toBe(
      'ready',
    );
    const error = await client.completeTask(task!.id, task!.lease_token, 'late').catch((e) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 409, code: 'lease_lost' });
    const [again] = await client.claimTasks('c1', { worker: 'ts', wait: '2s' });
    expect((await client.completeTask(again!.id, again!.lease_token, { ok: true })).task).toMatchObject({
      state: 'completed',
      attempts: 2,
      result: { ok: true },
    });
    await client.enqueueTasks('c2', [{ payload: 'x' }, { payload: 'y' }]);
    const two = await client.claimTasks('c2', { worker: 'ts', max: 2 });
    const { results } = await client.completeTasks([
      ...two.map((t) => ({ id: t.id, leaseToken: t.lease_token, result: t.payload })),
      { id: two[0]!.id, leaseToken: 'lease_stale' },
    ]);
    expect(results.map((r) => ('task' in r ? r.task.result : r.error.code))).toEqual(['x', 'y', 'lease_lost']);
  });

  it('RemoteWorker drains a queue: each task completed once, a flaky one retried, a not-retryable one dead', async () => {
    const items = Array.from({ length: 200 }, (_, i) => ({ payload: { i }, idempotencyKey: `t${i}` }));
    await client.enqueueTasks('drain', items);
    const { task: flaky } = await client.enqueueTask('drain', { flaky: true }, { maxAttempts: 3 });
    const { task: bad } = await client.enqueueTask('drain', { bad: true });
    const seen = new Map<number, number>();
    let flakyCalls = 0;
    const worker = new RemoteWorker(
      client,
      'drain',
      async (payload: { i?: number; flaky?: boolean; bad?: boolean }) => {
        if (payload.bad) throw Object.assign(new Error('no such address'), { retryable: false });
        if (payload.flaky && ++flakyCalls === 1) throw new Error('try again');
        if (payload.i !== undefined) seen.set(payload.i, (seen.get(payload.i) ?? 0) + 1);
        return { done: payload.i ?? 'flaky' };
      },
      { worker: 'drainer', concurrency: 8, wait: '2s' },
    );
    worker.start();
    try {
      await eventually(
        async () => (await client.tasks({ queue: 'drain', state: 'completed', limit: 500 })).count === 201,
        20_000,
      );
    } finally {
      await worker.stop();
    }
    expect(seen.size).toBe(200);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect((await client.taskEvents(flaky.id)).events.map((e) => e.type)).toEqual([
      'task.enqueued',
      'task.failed',
      'task.completed',
    ]);
    expect((await client.dead({ queue: 'drain' })).tasks.map((t) => [t.id, t.last_error])).toEqual([
      [bad.id, 'no such address'],
    ]);
  });
});
