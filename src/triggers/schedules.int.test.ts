import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { mount } from '../server/app.js';
import { triggerRoutes } from '../server/routes/triggers.js';
import { workflowRoutes } from '../server/routes/workflows.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { Scheduler, type SchedulerOptions } from './scheduler.js';
import { triggers, type TriggerService } from './service.js';
import { createRunStarter } from './starter.js';

const echo = workflow('echo', async (_ctx, input: unknown) => input);
/** Runs until it is sent `go`: a run that does not end by itself, for overlap. */
const hold = workflow('hold', async (ctx, input: unknown) => {
  await ctx.waitForEvent('go');
  return input;
});

interface Fired {
  slot: string;
  run_id?: string;
  catch_up?: boolean;
}

async function setup(engine: Engine, scheduler: Omit<SchedulerOptions, 'onError'> = {}) {
  engine.register(echo, hold);
  const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
  const starter = createRunStarter({ engine, store: engine.store, workflows });
  const errors: unknown[] = [];
  const service = triggers(engine, engine.store, {
    starter,
    routingEnabled: false,
    scheduler,
    onError: (e) => errors.push(e),
  });
  return { service, errors, app: mount(new Hono(), [...workflowRoutes(workflows), ...triggerRoutes(service)]) };
}

describe.each(backends)('schedules on $name', (backend) => {
  let engine: Engine;
  let service: TriggerService;
  let app: Hono;
  let errors: unknown[];
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;
  const stops: Array<() => Promise<void>> = [];

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const create = async (body: Record<string, unknown>) => {
    const res = await call('POST', '/schedules', body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string };
  };
  const slots = async (id: string, type = 'schedule.fired') =>
    (await engine.journal.readStream(`schedule-slot:${id}`, { limit: 10_000 }))
      .filter((e) => e.type === type)
      .map((e) => e.data as Fired);
  const runs = async () =>
    (await engine.journal.readAll({ streamPrefix: 'run:', types: ['run.started'], limit: 10_000 })).length;

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    second = t.second;
    ({ service, app, errors } = await setup(engine));
    close = async () => {
      for (const stop of stops.splice(0)) await stop();
      await service.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  it('refuses a bad cron, time zone or target with 400 naming the field, and lists the next slots', async () => {
    const badCron = await call('POST', '/schedules', { cron: '61 * * * *', target: { workflow: 'echo' } });
    expect(badCron.status).toBe(400);
    expect(badCron.body.error.problems).toEqual([
      { path: 'cron', message: expect.stringMatching(/^Invalid value for minute: 61/) },
    ]);
    const parts = await call('POST', '/schedules', { cron: '* * *', target: { workflow: 'echo' } });
    expect(parts.body.error.problems[0].path).toBe('cron');
    const many = await call('POST', '/schedules', {
      cron: '* * * * * * *',
      timezone: 'Mars/Olympus',
      target: { workflow: 'nope' },
      overlap: 'sometimes',
      input: '$.x..y',
    });
    expect(many.body.error.problems.map((p: { path: string }) => p.path).sort()).toEqual([
      'input',
      'overlap',
      'target.workflow',
    ]);
    const zone = await call('POST', '/schedules', {
      cron: '0 9 * * *',
      timezone: 'Mars/Olympus',
      target: { workflow: 'echo' },
    });
    expect(zone.body.error.problems).toEqual([
      { path: 'timezone', message: expect.stringContaining("'Mars/Olympus'") },
    ]);
    expect(
      (await call('POST', '/schedules', { cron: '0 0 30 2 *', target: { workflow: 'echo' } })).body.error.problems,
    ).toEqual([{ path: 'cron', message: 'never fires' }]);
    expect((await call('GET', '/schedules')).body.count).toBe(0);

    const made = await create({
      name: 'morning',
      cron: '30 9 * * 1-5',
      timezone: 'America/New_York',
      target: { workflow: 'echo' },
    });
    expect(made).toMatchObject({
      name: 'morning',
      overlap: 'skip',
      catch_up: 'skip',
      input: '$',
      state: { last_slot: null, fired: 0 },
    });
    const { body } = await call('GET', '/schedules');
    expect(body.count).toBe(1);
    const next: string[] = body.schedules[0].next;
    expect(next).toHaveLength(3);
    for (const slot of next) {
      expect(Date.parse(slot)).toBeGreaterThan(Date.now());
      expect(
        new Date(slot).toLocaleString('en-US', {
          timeZone: 'America/New_York',
          hour: 'numeric',
          minute: 'numeric',
          weekday: 'short',
        }),
      ).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 9:30 AM$/);
    }
    expect((await call('DELETE', `/schedules/${made.id}`)).status).toBe(204);
    expect((await call('GET', `/schedules/${made.id}`)).status).toBe(404);
  });

  it('records a slot once and starts one run however many processes fire it at once', async () => {
    const wf = (
      await call('POST', '/workflows', {
        name: 'tick',
        steps: [{ id: 'say', type: 'transform', config: { template: 'slot {{trigger.at}}', output_key: 'text' } }],
      })
    ).body;
    const sch = await create({
      cron: '0 * * * *',
      target: { workflow: wf.id },
      input: { at: '$.slot', schedule: '$.schedule_id' },
    });
    const other = await setup(await second());
    const slot = Date.parse('2030-01-01T10:00:00.000Z');
    const outcomes = await Promise.all(
      [service, other.service, service, other.service, service, other.service].map((s) =>
        s.schedules.fire(sch.id, slot),
      ),
    );
    expect(outcomes.sort()).toEqual(['fired', 'taken', 'taken', 'taken', 'taken', 'taken']);
    const [fired] = await slots(sch.id);
    expect(await slots(sch.id)).toHaveLength(1);
    expect(fired).toMatchObject({ slot: '2030-01-01T10:00:00.000Z', kind: 'execution', catch_up: false });
    expect(await service.schedules.fire(sch.id, slot - 3_600_000)).toBe('taken');
    const execution = await eventually(async () => {
      const r = (await call('GET', `/workflows/${wf.id}/executions/${fired!.run_id}`)).body;
      return r.status === 'success' ? r : undefined;
    });
    expect(execution).toMatchObject({
      trigger_type: 'schedule',
      trigger_data: { at: '2030-01-01T10:00:00.000Z', schedule: sch.id },
    });
    expect((await call('GET', `/schedules/${sch.id}`)).body.state).toMatchObject({
      last_slot: '2030-01-01T10:00:00.000Z',
      last_outcome: 'fired',
      last_run_id: fired!.run_id,
      fired: 1,
    });

    await call('DELETE', `/workflows/${wf.id}`);
    expect(await service.schedules.fire(sch.id, slot + 3_600_000)).toBe('failed');
    expect((await call('GET', `/schedules/${sch.id}`)).body.state).toMatchObject({
      last_outcome: 'failed',
      last_error: `NotFoundError: workflow ${wf.id} not found`,
      failed: 1,
    });
    await call('DELETE', `/schedules/${sch.id}`);
    expect(await service.schedules.fire(sch.id, slot + 7_200_000)).toBe('gone');
  });

  it('fires a every-second schedule once per slot with two schedulers running', async () => {
    const other = await setup(await second());
    await service.start();
    await other.service.start();
    stops.push(() => other.service.stop());
    // created after the schedulers started: they learn of it from the store's wake-up
    const sch = await create({ cron: '*/1 * * * * *', target: { workflow: 'echo' }, overlap: 'allow' });
    const created = Date.now();
    await sleep(4200);
    await Promise.all([service.stop(), other.service.stop()]);
    const fired = await slots(sch.id);
    const seconds = fired.map((f) => Date.parse(f.slot) / 1000);
    expect(new Set(seconds).size).toBe(seconds.length);
    expect(seconds.length).toBeGreaterThanOrEqual(3);
    // consecutive: no slot between the first and the last was missed
    expect(seconds.at(-1)! - seconds[0]!).toBe(seconds.length - 1);
    expect(seconds[0]! * 1000).toBeGreaterThan(created - 1000);
    expect(await runs()).toBe(fired.length);
    expect(errors).toEqual([]);
  });

  // On PostgreSQL the database keeps its own clock while this process's Date.now is 10 minutes off,
  // as on a machine whose clock is wrong: on the process clock, slots would fire 10 minutes early
  // (ahead) or not for 10 minutes (behind). On SQLite the database's clock is the process's own.
  it.each([
    ['ahead', 600_000],
    ['behind', -600_000],
  ])('fires an every-second schedule on the database clock with this process 10 minutes %s', async (_label, skew) => {
    const wall = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => wall() + skew);
    try {
      await service.start();
      const sch = await create({ cron: '*/1 * * * * *', target: { workflow: 'echo' }, overlap: 'allow' });
      const created = await engine.store.now();
      await sleep(3200);
      await service.stop();
      const slotsAt = (await slots(sch.id)).map((f) => Date.parse(f.slot));
      expect(slotsAt.length).toBeGreaterThanOrEqual(2);
      for (const at of slotsAt) expect(Math.abs(at - created)).toBeLessThan(10_000);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('skips a slot while the previous run has not ended (overlap: skip), and not with overlap: allow', async () => {
    await service.start();
    const skip = await create({ cron: '* * * * * *', target: { workflow: 'hold' } });
    const allow = await create({ cron: '* * * * * *', target: { workflow: 'hold' }, overlap: 'allow' });
    await sleep(3200);
    const [first] = await slots(skip.id);
    expect(await slots(skip.id)).toHaveLength(1);
    expect((await slots(skip.id, 'schedule.skipped')).length).toBeGreaterThanOrEqual(2);
    expect((await slots(allow.id)).length).toBeGreaterThanOrEqual(3);
    expect(await slots(allow.id, 'schedule.skipped')).toEqual([]);

    await engine.signal(first!.run_id!, 'go', null);
    await engine.runtime.handle(first!.run_id!).result();
    await eventually(async () => (await slots(skip.id)).length === 2, 5000);
    const state = (await call('GET', `/schedules/${skip.id}`)).body.state;
    expect(state.last_run_id).not.toBe(first!.run_id);
    expect(state.skipped).toBeGreaterThanOrEqual(2);
  });

  it('after downtime skips the missed slots, or runs one of them with catch_up: one', async () => {
    const scheduler = new Scheduler(engine.store, engine.journal, service.schedules, {
      graceMs: 1000,
      onError: (e) => errors.push(e),
    });
    await scheduler.start();
    stops.push(() => scheduler.stop());
    const one = await create({ cron: '* * * * * *', target: { workflow: 'echo' }, catch_up: 'one', overlap: 'allow' });
    const skip = await create({ cron: '* * * * * *', target: { workflow: 'echo' }, overlap: 'allow' });
    await eventually(async () => (await slots(one.id)).length >= 1 && (await slots(skip.id)).length >= 1, 5000);
    await scheduler.stop();
    const last = async (id: string) => Math.max(...(await slots(id)).map((f) => Date.parse(f.slot)));
    const [lastOne, lastSkip] = [await last(one.id), await last(skip.id)];
    await sleep(4000);
    const up = Date.now();
    await scheduler.start();
    await eventually(
      async () =>
        (await slots(one.id)).some((f) => Date.parse(f.slot) > up) &&
        (await slots(skip.id)).some((f) => Date.parse(f.slot) > up),
      5000,
    );
    await scheduler.stop();

    const firedAfter = async (id: string, since: number) =>
      (await slots(id))
        .filter((f) => Date.parse(f.slot) > since)
        .sort((a, b) => Date.parse(a.slot) - Date.parse(b.slot));
    const oneAfter = await firedAfter(one.id, lastOne);
    expect(oneAfter.filter((f) => f.catch_up)).toEqual([oneAfter[0]]);
    // a missed slot (older than the grace when the scheduler came back), with older missed ones skipped before it
    expect(Date.parse(oneAfter[0]!.slot)).toBeLessThan(up - 1000);
    expect(Date.parse(oneAfter[0]!.slot) - lastOne).toBeGreaterThanOrEqual(2000);
    const skipAfter = await firedAfter(skip.id, lastSkip);
    expect(skipAfter.filter((f) => f.catch_up)).toEqual([]);
    expect(Date.parse(skipAfter[0]!.slot) - lastSkip).toBeGreaterThanOrEqual(3000);
    expect(await runs()).toBe((await slots(one.id)).length + (await slots(skip.id)).length);
    expect(errors).toEqual([]);
  });
});
