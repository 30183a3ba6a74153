import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../engine.js';
import { TerminalError } from '../../errors.js';
import { createApp } from '../../server/app.js';
import { backends } from '../../testing/backends.js';
import { eventually, testEngine } from '../../testing/engine.js';
import { storedWorkflows } from '../../app/workflows.js';
import { OPERATOR_STREAM } from './operator.js';
import { workflow } from '../workflow.js';

const ops = { by: 'alice', reason: 'bad deploy of the mailer' };

describe.each(backends)('operator actions on $name', (backend) => {
  let close: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await close?.();
    close = null;
  });
  const engineWith = async (...workflows: Parameters<Engine['register']>) => {
    const made = await testEngine(backend, { workflows, pollMs: 50 });
    close = made.close;
    return made.engine;
  };
  const stepNames = async (engine: Engine, id: string) =>
    (await engine.run(id)).steps.map((s) => `${s.name}:${s.status}`);

  it('pauses a workflow: the running step finishes, no new step starts, new runs wait; resume runs them on', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const three = workflow('three', async (ctx, input: { gated: boolean }) => {
      await ctx.step('one', async () => (input.gated ? gate.then(() => 1) : 1));
      await ctx.step('two', async () => 2);
      return ctx.step('three', async () => 3);
    });
    const engine = await engineWith(three);
    const run = await engine.start(three, { gated: true }, { id: 'p-1' });
    await eventually(async () => (await stepNames(engine, 'p-1')).join() === 'one:running');
    expect(await engine.operator.pause('workflow', 'three', ops)).toEqual({ paused: true });
    expect(await engine.operator.pause('workflow', 'three', { by: 'bob', reason: 'again' })).toEqual({ paused: false });
    // past a poll of the pause, so the running pass has seen it
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await eventually(async () => (await stepNames(engine, 'p-1')).join() === 'one:success');
    await engine.start(three, { gated: false }, { id: 'p-2' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await stepNames(engine, 'p-1')).toEqual(['one:success']);
    expect(await stepNames(engine, 'p-2')).toEqual([]);
    expect((await engine.run('p-2')).status).toBe('pending');
    expect(await engine.operator.pauses()).toMatchObject([
      { kind: 'workflow', name: 'three', pausedBy: 'alice', reason: 'bad deploy of the mailer' },
    ]);

    expect(await engine.operator.resume('workflow', 'three', { by: 'alice', reason: 'fixed' })).toEqual({
      resumed: true,
    });
    expect(await run.result()).toBe(3);
    expect(await engine.runtime.handle('p-2').result()).toBe(3);
    expect(await stepNames(engine, 'p-1')).toEqual(['one:success', 'two:success', 'three:success']);
    const actions = (await engine.journal.readStream(OPERATOR_STREAM)).map((e) => e.data);
    expect(actions).toEqual([
      { action: 'workflow.paused', name: 'three', by: 'alice', reason: 'bad deploy of the mailer' },
      { action: 'workflow.resumed', name: 'three', by: 'alice', reason: 'fixed' },
    ]);
  });

  it('pauses a queue: none of its tasks runs until it is resumed', async () => {
    const engine = await engineWith();
    const done: string[] = [];
    engine.work('mail', async (payload: { to: string }) => void done.push(payload.to), { pollMs: 50 });
    await engine.operator.pause('queue', 'mail', ops);
    await engine.queue.enqueue('mail', { to: 'a@b.c' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(done).toEqual([]);
    await engine.operator.resume('queue', 'mail', { by: 'alice', reason: 'mailer fixed' });
    await eventually(() => done.length === 1);
  });

  it('cancels, retries and redrives by filter, journaling who, why and what', async () => {
    let fixed = false;
    const waiter = workflow('waiter', async (ctx) => ctx.waitForEvent('go'));
    const other = workflow('other', async (ctx) => ctx.waitForEvent('go'));
    const flaky = workflow('flaky', async (ctx, input: { n: number }) =>
      ctx.step('call', async () => {
        if (!fixed) throw new TerminalError('service down');
        return input.n * 2;
      }),
    );
    const engine = await engineWith(waiter, other, flaky);
    for (const id of ['w-1', 'w-2', 'w-3']) await engine.start(waiter, {}, { id });
    await engine.start(other, {}, { id: 'o-1' });
    for (const [i, id] of ['f-1', 'f-2'].entries()) await engine.start(flaky, { n: i + 1 }, { id });
    await eventually(async () =>
      (await Promise.all(['w-1', 'w-2', 'w-3', 'o-1'].map((id) => engine.run(id)))).every(
        (v) => v.status === 'waiting',
      ),
    );
    await eventually(async () =>
      (await Promise.all(['f-1', 'f-2'].map((id) => engine.run(id)))).every((v) => v.status === 'failed'),
    );

    const dry = await engine.operator.cancelRuns({ workflow: 'waiter', status: ['waiting'] }, ops, { dryRun: true });
    expect(dry.ids.sort()).toEqual(['w-1', 'w-2', 'w-3']);
    expect((await engine.run('w-1')).status).toBe('waiting');
    const cancelled = await engine.operator.cancelRuns({ workflow: 'waiter', status: ['waiting'] }, ops);
    expect(cancelled.ids.sort()).toEqual(['w-1', 'w-2', 'w-3']);
    await eventually(async () =>
      (await Promise.all(['w-1', 'w-2', 'w-3'].map((id) => engine.run(id)))).every((v) => v.status === 'cancelled'),
    );
    expect((await engine.run('o-1')).status).toBe('waiting');
    const cancelEvent = (await engine.journal.readStream('run:w-1')).find((e) => e.type === 'run.cancel_requested');
    expect(cancelEvent?.data).toEqual({ reason: 'cancelled by alice: bad deploy of the mailer' });

    fixed = true;
    const retried = await engine.operator.retryRuns({ workflow: 'flaky' }, { by: 'bob', reason: 'service is back' });
    expect(retried.ids.sort()).toEqual(['f-1', 'f-2']);
    expect(await engine.runtime.handle(retried.started['f-1']!).result()).toBe(2);
    expect(await engine.runtime.handle(retried.started['f-2']!).result()).toBe(4);
    const [restarted] = await engine.journal.readStream(`run:${retried.started['f-2']}`, { limit: 1 });
    expect(restarted!.data).toMatchObject({
      workflow: 'flaky',
      input: { n: 2 },
      retryOf: 'f-2',
      retriedBy: { by: 'bob', reason: 'service is back' },
    });

    let healthy = false;
    engine.work(
      'jobs',
      async () => {
        if (!healthy) throw new Error('boom');
        return 'ok';
      },
      { pollMs: 50 },
    );
    const { task } = await engine.queue.enqueue('jobs', { n: 1 }, { maxAttempts: 1 });
    await eventually(async () => (await engine.queue.get(task.id)).state === 'dead');
    healthy = true;
    const redriven = await engine.operator.redriveTasks({ queue: 'jobs' }, ops);
    expect(redriven.ids).toEqual([task.id]);
    await eventually(async () => (await engine.queue.get(task.id)).state === 'completed');

    const actions = (await engine.journal.readStream(OPERATOR_STREAM)).map((e) => e.data as Record<string, unknown>);
    expect(actions.map((a) => [a.action, a.by, a.count])).toEqual([
      ['runs.cancelled', 'alice', 3],
      ['runs.retried', 'bob', 2],
      ['tasks.redriven', 'alice', 1],
    ]);
    expect(actions[0]!.filter).toEqual({ workflow: 'waiter', status: ['waiting'] });
  });

  it('answers over HTTP, and refuses an action without who or why, naming the field', async () => {
    const engine = await engineWith();
    const app = createApp({
      engine,
      workflows: storedWorkflows(engine, { secretKey: randomBytes(32) }),
      uiDir: null,
    });
    const post = (path: string, body: unknown) =>
      app.fetch(
        new Request(`http://local${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      );
    expect(await (await post('/operator/pause', { kind: 'queue', name: 'mail', ...ops })).json()).toEqual({
      paused: true,
    });
    expect(await (await app.fetch(new Request('http://local/operator/pauses'))).json()).toMatchObject({
      pauses: [{ kind: 'queue', name: 'mail', paused_by: 'alice' }],
    });
    const bad = await post('/operator/runs/cancel', { by: 'alice', status: ['waiting'] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('reason');
    const dry = await post('/operator/runs/cancel', { status: ['waiting'], dry_run: true, ...ops });
    expect(await dry.json()).toEqual({ action: 'runs.cancelled', ids: [], skipped: [], dry_run: true });
    const actions = (await (await app.fetch(new Request('http://local/operator/actions'))).json()) as {
      actions: Array<{ action: string }>;
    };
    expect(actions.actions.map((a) => a.action)).toEqual(['queue.paused']);
  });
});
