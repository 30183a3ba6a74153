import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { NotFoundError, TerminalError, ValidationError } from '../errors.js';
import type { Engine } from '../engine.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

const quick = { baseMs: 10, factor: 2, maxMs: 50, jitter: 0.2 };

describe.each(backends)('task queue on $name', (backend) => {
  let engine: Engine;
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  beforeEach(async () => ({ engine, second, close } = await testEngine(backend)));
  afterEach(() => close());

  const types = async (id: string) => (await engine.queue.history(id)).map((e) => e.type);

  it('runs a task, stores its result and journals every state change', async () => {
    const { task } = await engine.queue.enqueue('email', { to: 'a@b.c' });
    engine.work('email', async (payload: { to: string }, { attempt }) => ({ sent: payload.to, attempt }));
    const done = await eventually(async () => {
      const t = await engine.queue.get(task.id);
      return t.state === 'completed' ? t : undefined;
    });
    expect(done.result).toEqual({ sent: 'a@b.c', attempt: 1 });
    // the claim is in the row; the event that ends the attempt names its worker and start
    const history = await engine.queue.history(task.id);
    expect(history.map((e) => [e.version, e.type])).toEqual([
      [1, 'task.enqueued'],
      [2, 'task.completed'],
    ]);
    expect(history[1]?.data).toEqual({
      attempt: 1,
      workerId: done.workerId,
      claimedAt: done.claimedAt,
      state: 'completed',
    });
    expect(done.workerId).toMatch(/worker_/);
    expect(done.claimedAt).toBeGreaterThanOrEqual(done.createdAt);
  });

  it('returns the original task for a repeated idempotency key and writes nothing', async () => {
    const first = await engine.queue.enqueue('email', { n: 1 }, { idempotencyKey: 'welcome-42' });
    const again = await engine.queue.enqueue('email', { n: 2 }, { idempotencyKey: 'welcome-42' });
    expect(again).toEqual({ task: first.task, created: false });
    expect(await engine.queue.list({ queue: 'email' })).toHaveLength(1);
    expect(await types(first.task.id)).toEqual(['task.enqueued']);
  });

  it('rejects bad input naming the field and the limit, and writes nothing', async () => {
    await expect(engine.queue.enqueue('email', 'x'.repeat(1024 * 1024))).rejects.toThrow(
      'payload: is 1 MiB (1048578 bytes), over the limit of 1 MiB (1048576 bytes)',
    );
    await expect(engine.queue.enqueue('email', { n: 10n })).rejects.toThrow(/^payload: is not JSON-serializable/);
    await expect(engine.queue.enqueue('bad queue!', {})).rejects.toThrow(ValidationError);
    await expect(engine.queue.enqueue('email', {}, { maxAttempts: 0 })).rejects.toThrow(/^maxAttempts/);
    await expect(engine.queue.enqueueMany('email', [{ payload: 1 }, { payload: () => 1 }])).rejects.toThrow(
      /^items\[1\]\.payload/,
    );
    expect(await engine.queue.list()).toEqual([]);
    expect(await engine.journal.readAll()).toEqual([]);
    await expect(engine.queue.get('task_nope')).rejects.toThrow(NotFoundError);
  });

  it('retries with backoff and succeeds, recording each failed attempt', async () => {
    const { task } = await engine.queue.enqueue('flaky', {}, { maxAttempts: 5 });
    let calls = 0;
    engine.work(
      'flaky',
      async () => {
        if (++calls < 3) throw new Error(`boom ${calls}`);
        return 'ok';
      },
      { backoff: quick, pollMs: 20 },
    );
    await eventually(async () => (await engine.queue.get(task.id)).state === 'completed');
    const history = await engine.queue.history(task.id);
    expect(history.map((e) => e.type)).toEqual(['task.enqueued', 'task.failed', 'task.failed', 'task.completed']);
    expect(history[1]?.data).toMatchObject({
      attempt: 1,
      error: 'Error: boom 1',
      state: 'ready',
      workerId: expect.stringMatching(/worker_/),
    });
    expect(history.slice(1).map((e) => (e.data as { attempt: number }).attempt)).toEqual([1, 2, 3]);
    const starts = history.slice(1).map((e) => (e.data as { claimedAt: number }).claimedAt);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect((await engine.queue.get(task.id)).attempts).toBe(3);
  });

  it('sends a task to the dead letters after its last attempt, and redrives it once', async () => {
    const { task } = await engine.queue.enqueue('doomed', { n: 1 }, { maxAttempts: 2 });
    let healthy = false;
    engine.work(
      'doomed',
      async () => {
        if (!healthy) throw new Error('still broken');
        return 'fixed';
      },
      { backoff: quick, pollMs: 20 },
    );
    await eventually(async () => (await engine.queue.get(task.id)).state === 'dead');
    const [dead] = await engine.queue.dead({ queue: 'doomed' });
    expect(dead).toMatchObject({ id: task.id, attempts: 2, lastError: 'Error: still broken' });
    expect((await engine.queue.history(task.id)).at(-1)).toMatchObject({
      type: 'task.dead',
      data: { reason: 'attempts used up', attempt: 2 },
    });
    healthy = true;
    expect((await engine.queue.redrive(task.id)).redriven).toBe(true);
    expect((await engine.queue.redrive(task.id)).redriven).toBe(false);
    await eventually(async () => (await engine.queue.get(task.id)).state === 'completed');
    expect((await types(task.id)).filter((t) => t === 'task.redriven')).toHaveLength(1);
  });

  it('never retries a TerminalError', async () => {
    const { task } = await engine.queue.enqueue('strict', {}, { maxAttempts: 10 });
    engine.work('strict', async () => {
      throw new TerminalError('invalid address');
    });
    await eventually(async () => (await engine.queue.get(task.id)).state === 'dead');
    expect(await engine.queue.get(task.id)).toMatchObject({ attempts: 1, lastError: 'TerminalError: invalid address' });
  });

  it('does not run a task before its run-at time', async () => {
    const runAt = Date.now() + 400;
    const { task } = await engine.queue.enqueue('later', {}, { runAt });
    let startedAt = 0;
    engine.work('later', async () => void (startedAt = Date.now()), { pollMs: 5_000 });
    await eventually(async () => (await engine.queue.get(task.id)).state === 'completed');
    expect(startedAt).toBeGreaterThanOrEqual(runAt);
  });

  it('hands a task enqueued here to an idle worker of this process as it is inserted: claimed by it, no claim of its own', async () => {
    const started: string[] = [];
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const worker = engine.work(
      'eager',
      async (_payload, { task }) => {
        started.push(task.id);
        await held;
        return null;
      },
      { concurrency: 1 },
    );
    await sleep(50);
    const first = await engine.queue.enqueue('eager', { n: 1 });
    expect(first.task).toMatchObject({ state: 'running', attempts: 1, workerId: worker.id });
    expect(await engine.queue.get(first.task.id)).toMatchObject({
      state: 'running',
      workerId: worker.id,
      leaseToken: first.task.leaseToken,
    });
    await eventually(async () => (started.length === 1 ? true : undefined));
    // the worker's one slot is taken, and a task of an ordering key waits for the claim: both ready
    const second = await engine.queue.enqueue('eager', { n: 2 });
    const keyed = await engine.queue.enqueue('eager', { n: 3 }, { orderingKey: 'k' });
    expect([second.task.state, keyed.task.state]).toEqual(['ready', 'ready']);
    finish();
    await eventually(async () =>
      (await engine.queue.list({ queue: 'eager', state: 'completed' })).length === 3 ? true : undefined,
    );
    expect(started).toEqual([first.task.id, second.task.id, keyed.task.id]);
    expect(await types(first.task.id)).toEqual(['task.enqueued', 'task.completed']);
    // a stopped worker takes nothing
    await worker.stop();
    expect((await engine.queue.enqueue('eager', { n: 4 })).task.state).toBe('ready');
  });

  it('claims only when a task may be claimable: a freed slot sends no claim, and a scheduled task still starts on time', async () => {
    const started = new Map<string, number>();
    const worker = engine.work('quiet', async (_payload, { task }) => void started.set(task.id, Date.now()), {
      concurrency: 2,
      pollMs: 60_000,
    });
    // once a task has come and gone, the worker is idle (its first claim may still be out before)
    const { task: first } = await engine.queue.enqueue('quiet', {});
    await eventually(async () => ((await engine.queue.get(first.id)).state === 'completed' ? true : undefined));
    await sleep(50);
    // the worker's claims are the group commit's lone statements
    let claims = 0;
    const group = engine.journal.group;
    const submit = group.submit.bind(group);
    group.submit = ((write) => {
      if (write.statement) claims += 1;
      return submit(write);
    }) as typeof group.submit;
    for (let i = 0; i < 10; i++) {
      const { task } = await engine.queue.enqueue('quiet', { i });
      expect(task).toMatchObject({ state: 'running', workerId: worker.id });
      await eventually(async () => ((await engine.queue.get(task.id)).state === 'completed' ? true : undefined));
    }
    expect(claims).toBe(0);
    // due in 300 ms: the handlers that finish meanwhile wake the worker, which must still keep the time
    const at = Date.now() + 300;
    const { task: later } = await engine.queue.enqueue('quiet', { later: true }, { runAt: at });
    for (let i = 0; i < 5; i++) {
      await engine.queue.enqueue('quiet', { i });
      await sleep(30);
    }
    await eventually(() => started.has(later.id), 10_000);
    expect(started.get(later.id)! - at).toBeLessThan(2_000);
  });

  it('wakes an idle worker of another process on enqueue', async () => {
    const other = await second();
    const started: number[] = [];
    other.work('ping', async () => void started.push(Date.now()), { pollMs: 60_000 });
    await sleep(100);
    const at = Date.now();
    await engine.queue.enqueue('ping', {});
    await eventually(() => started.length === 1, 5_000);
    expect(started[0]! - at).toBeLessThan(5_000);
  });

  it('re-delivers the task of a worker whose lease expired, and fences the old lease', async () => {
    const { task } = await engine.queue.enqueue('jobs', { n: 1 });
    const [stale] = await engine.store.taskClaim({
      queue: 'jobs',
      limit: 1,
      leaseMs: 100,
      workerId: 'crashed',
      leaseToken: 'old',
    });
    expect(stale?.id).toBe(task.id);
    engine.work('jobs', async (_p, { attempt }) => ({ attempt }), { pollMs: 50 });
    await eventually(async () => (await engine.queue.get(task.id)).state === 'completed');
    expect((await engine.queue.get(task.id)).result).toEqual({ attempt: 2 });
    expect(await engine.store.taskComplete({ items: [{ id: task.id, leaseToken: 'old', result: 'late' }] })).toEqual(
      [],
    );
    const history = await engine.queue.history(task.id);
    expect(history.map((e) => e.type)).toEqual(['task.enqueued', 'task.lease_expired', 'task.completed']);
    expect(history[1]?.data).toMatchObject({ attempt: 1, workerId: 'crashed', claimedAt: stale!.claimedAt });
  });

  it('runs tasks of one ordering key one at a time, in arrival order, across processes', async () => {
    const other = await second();
    const keys = ['k1', 'k2', 'k3'];
    await engine.queue.enqueueMany(
      'fifo',
      Array.from({ length: 45 }, (_, i) => ({ payload: { key: keys[i % 3], i }, orderingKey: keys[i % 3] })),
    );
    const active = new Set<string>();
    const order: Record<string, number[]> = { k1: [], k2: [], k3: [] };
    let overlap = false;
    const handler = async ({ key, i }: { key: string; i: number }) => {
      if (active.has(key)) overlap = true;
      active.add(key);
      await sleep(1 + (i % 3));
      order[key]!.push(i);
      active.delete(key);
    };
    engine.work('fifo', handler, { concurrency: 5, pollMs: 20 });
    other.work('fifo', handler, { concurrency: 5, pollMs: 20 });
    await eventually(() => Object.values(order).every((list) => list.length === 15), 20_000);
    expect(overlap).toBe(false);
    for (const list of Object.values(order)) expect(list).toEqual([...list].sort((a, b) => a - b));
  });

  it('lets an idle worker sleep while the task before its next one runs, and wakes it when that one completes', async () => {
    await engine.queue.enqueue('keyed', { n: 1 }, { orderingKey: 'K' });
    const { task: next } = await engine.queue.enqueue('keyed', { n: 2 }, { orderingKey: 'K' });
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const first = engine.work(
      'keyed',
      async () => {
        started();
        await sleep(300);
        return 'first';
      },
      { concurrency: 1 },
    );
    await running;
    // the first worker claims nothing more: only the second, whose poll is a minute away, can take the next task
    const stopping = first.stop();
    let looks = 0;
    const dueIn = engine.store.taskDueIn;
    engine.store.taskDueIn = (p) => (looks++, dueIn(p));
    engine.work('keyed', async () => 'second', { pollMs: 60_000 });
    await stopping;
    const done = await eventually(async () => {
      const t = await engine.queue.get(next.id);
      return t.state === 'completed' ? t : undefined;
    }, 5_000);
    expect(done.result).toBe('second');
    // counted as due, the waiting task had the idle worker claim again every millisecond (hundreds of looks)
    expect(looks).toBeLessThan(20);
  });

  it('aborts the handler signal when the lease is lost', async () => {
    const { task } = await engine.queue.enqueue('slow', {});
    let aborted: unknown;
    engine.work(
      'slow',
      (_p, { signal }) =>
        new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject((aborted = signal.reason)))),
      {
        leaseMs: 300,
        pollMs: 50,
      },
    );
    await eventually(async () => (await engine.queue.get(task.id)).state === 'running');
    await engine.store.transaction(async (tx) => {
      const [t] = await tx.taskList({ queue: 'slow', limit: 1 });
      await tx.taskFail({ id: t!.id, leaseToken: t!.leaseToken!, error: 'operator cancelled', retryDelayMs: null });
    });
    await eventually(() => aborted !== undefined);
    expect(String(aborted)).toMatch(/lease lost/);
  });

  it('prefetches beyond its concurrency and gives back, unstarted and uncounted, what it holds when it stops', async () => {
    await engine.queue.enqueueMany('held', [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const started: unknown[] = [];
    const worker = engine.work(
      'held',
      async (payload) => {
        started.push(payload);
        await blocked;
      },
      { concurrency: 1, prefetch: 1, pollMs: 20 },
    );
    // one running, one held: both claimed, only one started
    await eventually(
      async () => (await engine.store.taskList({ queue: 'held', state: 'running', limit: 10 })).length === 2,
    );
    expect(started).toEqual([1]);
    const stopping = worker.stop();
    await eventually(
      async () => (await engine.store.taskList({ queue: 'held', state: 'running', limit: 10 })).length === 1,
    );
    release();
    await stopping;
    expect(started).toEqual([1]);
    const rows = await engine.store.taskList({ queue: 'held', limit: 10 });
    expect(rows.map((t) => [t.payload, t.state, t.attempts]).sort()).toEqual([
      [1, 'completed', 1],
      [2, 'ready', 0],
      [3, 'ready', 0],
    ]);
  });

  it('gives back a prefetched task it could not start within 2 s, so another worker runs it', async () => {
    const [first, second_] = await engine.queue.enqueueMany('stuck', [{ payload: 'a' }, { payload: 'b' }]);
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    engine.work('stuck', () => blocked, { concurrency: 1, prefetch: 1, pollMs: 20 });
    try {
      await eventually(async () => (await engine.store.taskGet({ id: second_!.task.id })).state === 'running');
      const other = await second();
      other.work('stuck', async () => 'elsewhere', { pollMs: 20 });
      // without the give-back it would wait for the 30 s lease; given back, the first worker must not take it again
      const done = await eventually(async () => {
        const t = await engine.store.taskGet({ id: second_!.task.id });
        return t.state === 'completed' ? t : undefined;
      }, 10_000);
      expect(done).toMatchObject({ result: 'elsewhere', attempts: 1 });
      expect((await engine.store.taskGet({ id: first!.task.id })).state).toBe('running');
    } finally {
      release();
    }
  });
});
