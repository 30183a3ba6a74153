import { describe, expect, it } from 'vitest';
import { backends } from '../../testing/backends.js';
import { useServer } from '../test-server.js';

describe.each(backends)('queue limits and task concurrency over HTTP on $name', (backend) => {
  const { call } = useServer(backend);
  const claim = async (queue: string) =>
    (await call('POST', `/queues/${queue}/claim`, { worker: 'w', max: 10 })).body.tasks as Array<{ id: string }>;

  it("sets, shows and removes a queue's limit, which the next claim obeys", async () => {
    expect((await call('GET', '/queues/lq/limit')).body).toEqual({ queue: 'lq', concurrency: null });
    const set = await call('PUT', '/queues/lq/limit', { concurrency: 2 });
    expect(set).toEqual({ status: 200, body: { queue: 'lq', concurrency: 2 } });
    expect((await call('GET', '/queues/lq/limit')).body.concurrency).toBe(2);
    await call('POST', '/queues/lq/tasks', { tasks: [1, 2, 3, 4].map((n) => ({ payload: { n } })) });
    expect(await claim('lq')).toHaveLength(2);
    expect(await claim('lq')).toHaveLength(0);
    await call('PUT', '/queues/lq/limit', { concurrency: null });
    expect((await call('GET', '/queues/lq/limit')).body.concurrency).toBeNull();
    expect(await claim('lq')).toHaveLength(2);
  });

  it('refuses a limit out of range, naming the field', async () => {
    for (const concurrency of [0, -1, 1.5, 'two', 1_000_001]) {
      const bad = await call('PUT', '/queues/lq2/limit', { concurrency });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(bad.body)).toContain('concurrency');
    }
    const task = await call('POST', '/queues/lq2/tasks', { payload: 1, concurrency: { key: 'k', limit: 0 } });
    expect(task.status).toBe(400);
    expect(JSON.stringify(task.body)).toContain('concurrency');
    expect((await call('GET', '/queues/lq2/limit')).body.concurrency).toBeNull();
  });

  it('enqueues tasks with a concurrency key and a priority: the key runs its limit at once, the higher first', async () => {
    const enqueue = (body: unknown) => call('POST', '/queues/kq/tasks', body);
    await enqueue({ tasks: [1, 2, 3].map((n) => ({ payload: { n }, concurrency: { key: 'user:1', limit: 2 } })) });
    const urgent = (await enqueue({ payload: 'urgent', priority: 10 })).body.task;
    expect(urgent.priority).toBe(10);
    const first = await claim('kq');
    expect(first.map((t) => t.id)[0]).toBe(urgent.id);
    expect(first).toHaveLength(3);
    expect(await claim('kq')).toHaveLength(0);
  });

  it('drop_newest answers 409 naming the limit; cancel_in_progress cancels the oldest task in flight of the key (here a waiting one)', async () => {
    const drop = (payload: number) =>
      call('POST', '/queues/dq/tasks', { payload, concurrency: { key: 'user:7', limit: 1, on_limit: 'drop_newest' } });
    expect((await drop(1)).status).toBe(201);
    const refused = await drop(2);
    expect(refused.status).toBe(409);
    expect(JSON.stringify(refused.body)).toContain('concurrency user:7 — 1 of 1 in use');
    const cancel = async (payload: number) =>
      (
        await call('POST', '/queues/cq/tasks', {
          payload,
          concurrency: { key: 'chat:1', limit: 1, on_limit: 'cancel_in_progress' },
        })
      ).body.task.id as string;
    const first = await cancel(1);
    const second = await cancel(2);
    expect((await claim('cq')).map((t) => t.id)).toEqual([second]);
    const gone = await call('GET', `/tasks/${first}/events`);
    expect(gone.body.events.map((e: { type: string }) => e.type)).toEqual(['task.enqueued', 'task.cancelled']);
  });

  it('takes turns between fairness groups (fair_by), and refuses bad values naming the field', async () => {
    const big = (
      await call('POST', '/queues/fq/tasks', {
        tasks: [1, 2, 3, 4].map((n) => ({ payload: n, fair_by: 'big', delay: '0s' })),
      })
    ).body.tasks.map((r: { task: { id: string } }) => r.task.id) as string[];
    const small = (await call('POST', '/queues/fq/tasks', { payload: 'small', fair_by: 'small' })).body.task.id;
    // small joins the next round: among the first three, before big's third and fourth
    const claimed = (await call('POST', '/queues/fq/claim', { worker: 'w', max: 3 })).body.tasks as Array<{
      id: string;
    }>;
    expect(claimed.map((t) => t.id)).toContain(small);
    expect(claimed.map((t) => t.id)).not.toContain(big[3]);
    const bad = await call('POST', '/queues/fq/tasks', {
      payload: 1,
      concurrency: { key: 'k', limit: 1, on_limit: 'x' },
    });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('on_limit');
    const empty = await call('POST', '/queues/fq/tasks', { payload: 1, fair_by: '' });
    expect(empty.status).toBe(400);
    expect(JSON.stringify(empty.body)).toContain('fair_by');
  });
  it('enqueues tasks with a rate_limit: a claim hands out what the limit has room for, the rest wait; bad values refused naming the field', async () => {
    expect((await call('POST', '/limits', { name: 'http-crm', limit: 2, period: '1h' })).status).toBeLessThan(300);
    const made = await call('POST', '/queues/rq/tasks', {
      tasks: [1, 2, 3].map((n) => ({ payload: n, rate_limit: { name: 'http-crm' } })),
    });
    expect(made.status).toBe(201);
    // a remote worker's claim: two taken, the third back in the queue till the next slot, its attempt not counted
    expect(await claim('rq')).toHaveLength(2);
    const waiting = (await call('GET', '/tasks?queue=rq&state=ready')).body.tasks;
    expect(waiting).toHaveLength(1);
    expect(waiting[0].attempts).toBe(0);
    expect(await claim('rq')).toHaveLength(0);
    const unknown = await call('POST', '/queues/rq/tasks', { payload: 1, rate_limit: { name: 'nope' } });
    expect(unknown.status).toBe(400);
    expect(JSON.stringify(unknown.body)).toContain("no rate limit named 'nope'");
    const units = await call('POST', '/queues/rq/tasks', { payload: 1, rate_limit: { name: 'http-crm', units: 0 } });
    expect(units.status).toBe(400);
    expect(JSON.stringify(units.body)).toContain('rate_limit');
  });
});
