import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { RUN_QUEUE } from '../runtime/runtime.js';
import { workflow } from '../runtime/workflow.js';
import type { StreamAppend } from '../storage/store.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { parseRetention } from './policy.js';

const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));
const waiter = workflow('waiter', async (ctx) => ctx.waitForEvent('go'));
const kid = workflow('kid', async (ctx) => ctx.step('play', async () => 'done'));
const parent = workflow('parent', async (ctx) => {
  await ctx.child(kid, {}, { id: 'kid-1' });
  return ctx.waitForEvent('go');
});

describe('retention policy', () => {
  it('parses kinds and ages, and names the setting on a mistake', () => {
    expect(parseRetention('runs:30d, tasks:12h')).toEqual({ runs: 30 * 86_400_000, tasks: 12 * 3_600_000 });
    expect(parseRetention(undefined)).toEqual({});
    expect(() => parseRetention('runs:soon')).toThrow(/RUNLEDGER_RETENTION\.runs/);
    expect(() => parseRetention('logs:1d')).toThrow(/'logs' is not a kind/);
    expect(() => parseRetention('runs')).toThrow(/kind:age/);
    expect(() => parseRetention('runs:1d,runs:2d')).toThrow(/twice/);
  });
});

describe.each(backends)('retention on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const open = async (): Promise<Engine> => {
    const made = await testEngine(backend, { pollMs: 100, workflows: [quick, waiter, parent, kid] });
    close = made.close;
    return made.engine;
  };

  it('deletes finished runs whole and nothing live, counts the same in a dry run, and records what it did', async () => {
    const engine = await open();
    const service = storedWorkflows(engine, { secretKey: randomBytes(32) });
    for (const id of ['q1', 'q2', 'q3']) await (await engine.start(quick, {}, { id })).result();
    await engine.start(waiter, {}, { id: 'w1' });
    await engine.start(parent, {}, { id: 'p1' });
    const wf = await service.definitions.create({
      name: 'wf',
      steps: [{ id: 'a', type: 'transform', config: { mapping: { x: 1 } } }],
    });
    const { execution_id } = await service.executions.execute(wf.id, {});
    const status = async (id: string) => (await engine.run(id).catch(() => undefined))?.status;
    await eventually(
      async () =>
        (await status(execution_id)) === 'success' &&
        (await status('kid-1')) === 'success' &&
        (await status('p1')) === 'waiting',
    );
    await eventually(async () => (await status('w1')) === 'waiting');
    // a run's last pass commits its task after the run ended; until then retention leaves the run alone
    const settled = () =>
      eventually(async () =>
        (await engine.store.taskStats()).every((q) => q.queue !== RUN_QUEUE || q.running + q.ready === 0),
      );
    await settled();
    const passTasks = (await engine.queue.list({ queue: RUN_QUEUE, limit: 1000 })).filter(
      (t) => t.orderingKey === 'q1',
    );
    expect(passTasks.length).toBeGreaterThan(0);
    const eventsBefore = (await engine.store.status()).events;

    const dry = await engine.retention.prune({ runs: 0 }, { dryRun: true, batchSize: 2 });
    expect(dry).toEqual([expect.objectContaining({ kind: 'runs', runs: 4 })]);
    expect((await engine.store.status()).events).toBe(eventsBefore);
    expect((await engine.run('q1')).status).toBe('success');

    const [pruned] = await engine.retention.prune({ runs: 0 }, { batchSize: 2, pauseMs: 0 });
    expect(pruned).toEqual({ ...dry[0], kind: 'runs', runs: 4 });
    for (const id of ['q1', 'q2', 'q3', execution_id]) {
      await expect(engine.run(id)).rejects.toThrow(/not found/);
      expect(await engine.journal.readStream(`run:${id}`)).toEqual([]);
    }
    for (const t of passTasks) {
      await expect(engine.queue.get(t.id)).rejects.toThrow(/not found/);
      expect(await engine.queue.history(t.id)).toEqual([]);
    }
    expect((await service.executions.list(wf.id)).executions).toEqual([]);
    // live runs, and a finished child whose parent still waits, stay
    expect((await engine.run('w1')).status).toBe('waiting');
    expect((await engine.run('p1')).status).toBe('waiting');
    expect((await engine.run('kid-1')).status).toBe('success');
    const [record] = await engine.journal.readStream('retention');
    expect(record).toMatchObject({
      type: 'retention.pruned',
      data: { kind: 'runs', runs: 4, tasks: pruned!.tasks, events: pruned!.events },
    });
    expect(pruned!.events).toBeGreaterThan(4 * 3);

    // once the parent ends, the child goes with it; the waiting run still stays
    await engine.signal('p1', 'go', { ok: true });
    await eventually(async () => (await engine.run('p1')).status === 'success');
    await settled();
    const [again] = await engine.retention.prune({ runs: 0 }, { pauseMs: 0 });
    expect(again!.runs).toBe(2);
    await expect(engine.run('kid-1')).rejects.toThrow(/not found/);
    expect((await engine.run('w1')).status).toBe('waiting');
    // the waiting run still works after its neighbours went
    await engine.signal('w1', 'go', 'yes');
    expect(await engine.runtime.handle('w1').result()).toBe('yes');
  });

  it('prunes continuously in the background until stopped', async () => {
    const engine = await open();
    const pruned: number[] = [];
    engine.on('retention:pruned', (e) => void (e.runs > 0 && pruned.push(e.runs)));
    engine.retention.start({ runs: 0 }, { intervalMs: 50, pauseMs: 0 });
    await (await engine.start(quick, {}, { id: 'bg-1' })).result();
    await eventually(async () => (await engine.store.projectionGet({ name: 'run', key: 'bg-1' })) === undefined);
    await engine.retention.stop();
    await (await engine.start(quick, {}, { id: 'bg-2' })).result();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await engine.run('bg-2')).status).toBe('success');
    expect(pruned).toEqual([1]);
  });

  it('deletes finished tasks of other queues by age, never ready or running ones', async () => {
    const engine = await open();
    engine.work(
      'mail',
      async (payload: { fail?: boolean }) => {
        if (payload.fail) throw new Error('bounced');
        return 'sent';
      },
      { backoff: { baseMs: 1, factor: 1, maxMs: 1, jitter: 0 } },
    );
    const done = await engine.queue.enqueue('mail', {});
    const dead = await engine.queue.enqueue('mail', { fail: true }, { maxAttempts: 1 });
    const later = await engine.queue.enqueue('mail', {}, { runAt: Date.now() + 3_600_000 });
    await eventually(
      async () =>
        (await engine.queue.get(done.task.id)).state === 'completed' &&
        (await engine.queue.get(dead.task.id)).state === 'dead',
    );
    expect(await engine.retention.prune({ tasks: 3_600_000 })).toEqual([expect.objectContaining({ tasks: 0 })]);
    // "older than 0 ms" is strictly older: not while the clock still reads the millisecond they finished in
    const finished = Math.max(
      ...(await Promise.all([done, dead].map(async (t) => (await engine.queue.get(t.task.id)).updatedAt))),
    );
    await eventually(() => Date.now() > finished);
    const [pruned] = await engine.retention.prune({ tasks: 0 }, { pauseMs: 0 });
    expect(pruned!.tasks).toBe(2);
    await expect(engine.queue.get(done.task.id)).rejects.toThrow(/not found/);
    expect(await engine.queue.history(dead.task.id)).toEqual([]);
    expect((await engine.queue.get(later.task.id)).state).toBe('ready');
  });

  it('keeps the database bounded under a steady load of 100,000 events, and subscribers read on across the gaps', async () => {
    const engine = await open();
    const seen: number[] = [];
    const subscriber = await engine.subscribe(
      'audit',
      { streamPrefix: 'audit:', batchSize: 500 },
      async (event) => void seen.push(event.data as number),
    );
    const runsPerRound = 200;
    const eventsPerRun = 50;
    const sizes: number[] = [];
    let n = 0;
    for (let round = 0; round < 10; round++) {
      for (let at = 0; at < runsPerRound; at += 20) {
        const appends: StreamAppend[] = [];
        for (let i = 0; i < 20; i++) {
          const id = `load-${round}-${at + i}`;
          const values = Array.from({ length: eventsPerRun - 2 }, (_, seq) => ({
            type: 'value.recorded',
            data: { seq: seq + 1, name: 'random', value: seq },
          }));
          appends.push({
            streamId: `run:${id}`,
            events: [
              {
                type: 'run.started',
                data: { workflow: 'quick', input: null, orderingKey: null, deadline: null, parent: null },
              },
              ...values,
              { type: 'run.completed', data: { output: null } },
            ],
          });
        }
        appends.push({ streamId: `audit:${round}`, events: [{ type: 'audit', data: n++ }] });
        await engine.journal.appendMany(appends);
      }
      const [pruned] = await engine.retention.prune({ runs: 0 }, { batchSize: 100, pauseMs: 0 });
      expect(pruned!.runs).toBe(runsPerRound);
      const status = await engine.store.status();
      // what is left: the audit events and one retention record per round
      expect(status.events).toBeLessThanOrEqual(n + round + 1);
      if (backend.name === 'sqlite') {
        const file = status.location;
        sizes.push(statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0));
      }
    }
    expect(10 * runsPerRound * eventsPerRun).toBe(100_000);
    if (backend.name === 'sqlite') {
      // the file stops growing once freed pages are reused and given back
      expect(sizes.at(-1)!).toBeLessThanOrEqual(sizes[2]! * 1.25);
    }
    // the subscriber reads on in its own time: a loaded machine takes longer than the default 10 s
    await eventually(() => seen.length === n, 60_000);
    expect(seen).toEqual(Array.from({ length: n }, (_, i) => i));
    await subscriber.stop();
  }, 120_000);
});
