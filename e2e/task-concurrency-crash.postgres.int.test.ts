import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { createEngine, type Engine } from '../src/engine.js';
import { TASK_COMPLETED } from '../src/storage/tasks.js';
import { createPostgresDatabase } from '../src/testing/databases.js';
import { taskTransitions } from '../src/queue/lifecycle.js';

/** A worker process of `task-concurrency-child.ts`, with the ids of the tasks it started as it says them. */
function worker(database: string) {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'e2e/task-concurrency-child.ts', database], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const started: string[] = [];
  let out = '';
  let ready = false;
  proc.stdout!.on('data', (chunk) => {
    out += chunk;
    for (let at = out.indexOf('\n'); at >= 0; at = out.indexOf('\n')) {
      const line = out.slice(0, at);
      out = out.slice(at + 1);
      if (line === 'ready') ready = true;
      if (line.startsWith('start ')) started.push(line.slice('start '.length));
    }
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  return { proc, started, exited, isReady: () => ready };
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const procs: ChildProcess[] = [];
let engine: Engine | undefined;
afterAll(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await engine?.close();
});

it('never runs more than the limit of a key across three worker processes, also when one holding a slot is killed', async () => {
  const database = await createPostgresDatabase();
  engine = await createEngine({ database, workers: false });
  const workers = [worker(database), worker(database), worker(database)];
  procs.push(...workers.map((w) => w.proc));
  // starting three engines from source takes a while on a busy machine
  await until('the workers to start', () => workers.every((w) => w.isReady()), 60_000);
  const enqueued = await engine.queue.enqueueMany(
    'cc',
    Array.from({ length: 10 }, (_, n) => ({ payload: { n }, concurrency: { key: 'tenant:1', limit: 2 } })),
  );
  const ids = enqueued.map((r) => r.task.id);
  // the first worker to start a task is killed while it holds that task's slot
  await until('a task to start', () => workers.some((w) => w.started.length > 0));
  const victim = workers.find((w) => w.started.length > 0)!;
  victim.proc.kill('SIGKILL');
  await victim.exited;
  const held = victim.started[0]!;
  // the lease is a minute: done before it only if the liveness sweep gave the slot back
  await until(
    'every task to complete',
    async () => {
      const done = await engine!.queue.list({ queue: 'cc', state: 'completed', limit: 100 });
      return done.length === ids.length;
    },
    45_000,
  );

  // every attempt from the tasks' journals: [claimed, ended) on the database clock
  const attempts: Array<{ id: string; from: number; to: number }> = [];
  for (const id of ids) {
    const events = await engine.queue.history(id);
    expect(
      events.filter((e) => e.type === TASK_COMPLETED),
      `${id} completed once`,
    ).toHaveLength(1);
    for (const e of events.filter((e) => e.type !== 'task.enqueued')) {
      const data = e.data as { claimedAt: number };
      attempts.push({ id, from: data.claimedAt, to: e.timestamp });
    }
  }
  const expired = (await engine.queue.history(held)).filter((e) => e.type === taskTransitions.expire.event);
  expect(expired, 'the killed worker’s attempt ended by the sweep').toHaveLength(1);
  const edges = attempts.flatMap((a) => [
    { at: a.from, step: 1 },
    { at: a.to, step: -1 },
  ]);
  // an attempt that ends at the moment another starts freed its slot for it
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let now = 0;
  let most = 0;
  for (const e of edges) {
    now += e.step;
    most = Math.max(most, now);
  }
  expect(most).toBe(2);
  // one attempt per task, and one more per attempt the kill cut short (the victim may have held both slots)
  const cut = attempts.length - ids.length;
  expect(cut).toBeGreaterThanOrEqual(1);
  expect(cut).toBeLessThanOrEqual(2);
}, 120_000);

it("gives a small fairness group its turns under a key's limit across three worker processes, one killed", async () => {
  const database = await createPostgresDatabase();
  const own = await createEngine({ database, workers: false });
  try {
    const workers = [worker(database), worker(database), worker(database)];
    procs.push(...workers.map((w) => w.proc));
    await until('the workers to start', () => workers.every((w) => w.isReady()), 60_000);
    const concurrency = { key: 'model', limit: 2 };
    // A's backlog first (a second back, so B's turns follow A's), then B's three
    const a = await own.queue.enqueueMany(
      'cc',
      Array.from({ length: 16 }, (_, n) => ({ payload: { n }, concurrency, fairBy: 'A', runAt: Date.now() - 1000 })),
    );
    const b = await own.queue.enqueueMany(
      'cc',
      Array.from({ length: 3 }, (_, n) => ({ payload: { n }, concurrency, fairBy: 'B' })),
    );
    await until('a task to start', () => workers.some((w) => w.started.length > 0));
    const victim = workers.find((w) => w.started.length > 0)!;
    victim.proc.kill('SIGKILL');
    await victim.exited;
    const ids = [...a, ...b].map((r) => r.task.id);
    await until(
      'every task to complete',
      async () => (await own.queue.list({ queue: 'cc', state: 'completed', limit: 100 })).length === ids.length,
      60_000,
    );
    // each task's first claim, on the database clock
    const first = new Map<string, number>();
    for (const id of ids) {
      const events = (await own.queue.history(id)).filter((e) => e.type !== 'task.enqueued');
      expect(
        events.filter((e) => e.type === TASK_COMPLETED),
        `${id} completed once`,
      ).toHaveLength(1);
      first.set(id, Math.min(...events.map((e) => (e.data as { claimedAt: number }).claimedAt)));
    }
    const lastB = Math.max(...b.map((r) => first.get(r.task.id)!));
    // turns A0, A1, B0, A2, B1, A3, B2: four of A before B's last (one more for a claim at the same millisecond)
    const aBefore = a.filter((r) => first.get(r.task.id)! < lastB).length;
    expect(aBefore).toBeLessThanOrEqual(5);
  } finally {
    await own.close();
  }
}, 150_000);
