import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { mount } from '../server/app.js';
import { triggerRoutes } from '../server/routes/triggers.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { triggers, type TriggerService } from './service.js';
import { createRunStarter } from './starter.js';

const echo = workflow('echo', async (_ctx, input: unknown) => input);
const other = workflow('other', async (_ctx, input: unknown) => input);

async function setup(engine: Engine) {
  engine.register(echo, other);
  const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
  const starter = createRunStarter({ engine, store: engine.store, workflows });
  const errors: unknown[] = [];
  const service = triggers(engine, engine.store, { starter, routingEnabled: false, onError: (e) => errors.push(e) });
  return { service, errors, app: mount(new Hono(), triggerRoutes(service)) };
}

describe.each(backends)('editing and pausing schedules on $name', (backend) => {
  let engine: Engine;
  let service: TriggerService;
  let app: Hono;
  let errors: unknown[];
  let second: () => Promise<Engine>;
  let close: () => Promise<void>;

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
  const fired = async (id: string) =>
    (await engine.journal.readStream(`schedule-slot:${id}`, { limit: 10_000 }))
      .filter((e) => e.type === 'schedule.fired')
      .map((e) => e.data as { slot: string; catch_up: boolean });

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    second = t.second;
    ({ service, app, errors } = await setup(engine));
    close = async () => {
      await service.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  it('replaces a schedule in place: same id, new next slots, each bad field named, 404 for none', async () => {
    const sch = await create({ name: 'a', cron: '0 9 * * *', target: { workflow: 'echo' } });
    const edit = { name: 'b', cron: '30 18 * * *', timezone: 'Asia/Tokyo', target: { workflow: 'other' }, input: {} };
    const { status, body } = await call('PUT', `/schedules/${sch.id}`, edit);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ ...edit, id: sch.id, paused: false, overlap: 'skip' });
    for (const slot of body.next)
      expect(new Date(slot).toLocaleTimeString('en-GB', { timeZone: 'Asia/Tokyo' })).toBe('18:30:00');
    expect((await call('GET', '/schedules')).body.count).toBe(1);

    const bad = await call('PUT', `/schedules/${sch.id}`, { cron: '* * *', target: { workflow: 'nope' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems.map((p: { path: string }) => p.path).sort()).toEqual(['cron', 'target.workflow']);
    expect((await call('GET', `/schedules/${sch.id}`)).body.cron).toBe('30 18 * * *');
    expect((await call('PUT', '/schedules/sch_none', edit)).status).toBe(404);
    expect((await call('POST', '/schedules/sch_none/pause')).status).toBe(404);
  });

  it('fires the edited cron from the edit on, in a scheduler already running', async () => {
    await service.start();
    const sch = await create({ cron: '0 0 1 1 *', target: { workflow: 'echo' }, overlap: 'allow' });
    await sleep(1200);
    expect(await fired(sch.id)).toEqual([]);
    const edited = Date.now();
    await call('PUT', `/schedules/${sch.id}`, { cron: '* * * * * *', target: { workflow: 'echo' }, overlap: 'allow' });
    await eventually(async () => (await fired(sch.id)).length >= 2, 5000);
    for (const f of await fired(sch.id)) expect(Date.parse(f.slot)).toBeGreaterThan(edited - 1000);
    expect(errors).toEqual([]);
  });

  it('a paused schedule fires nothing in any process; resumed, it fires the next slot, not the missed ones', async () => {
    const two = await setup(await second());
    await service.start();
    await two.service.start();
    try {
      const paused = await create({
        cron: '* * * * * *',
        target: { workflow: 'echo' },
        overlap: 'allow',
        catch_up: 'one',
      });
      const running = await create({ cron: '* * * * * *', target: { workflow: 'echo' }, overlap: 'allow' });
      await eventually(async () => (await fired(paused.id)).length >= 1, 5000);
      const pause = await call('POST', `/schedules/${paused.id}/pause`);
      expect(pause.body).toMatchObject({ paused: true, next: [] });
      const pausedAt = Date.parse(pause.body.updated_at);
      const before = (await fired(paused.id)).length;
      await sleep(3200);
      // every slot it fired was before the pause; the other schedule went on
      expect(await fired(paused.id)).toHaveLength(before);
      for (const f of await fired(paused.id)) expect(Date.parse(f.slot)).toBeLessThanOrEqual(pausedAt);
      expect((await fired(running.id)).some((f) => Date.parse(f.slot) > pausedAt + 2000)).toBe(true);
      // a process that had not heard of the pause cannot fire a slot either
      expect(await two.service.schedules.fire(paused.id, Date.now() + 60_000)).toBe('paused');

      const resume = await call('POST', `/schedules/${paused.id}/resume`);
      expect(resume.body.paused).toBe(false);
      const resumedAt = Date.parse(resume.body.updated_at);
      expect(Date.parse(resume.body.next[0])).toBeGreaterThan(resumedAt);
      await eventually(async () => (await fired(paused.id)).length > before, 5000);
      const after = (await fired(paused.id)).slice(before);
      // no catch-up of the slots missed while paused, though the schedule has catch_up: one
      for (const f of after) {
        expect(f.catch_up).toBe(false);
        expect(Date.parse(f.slot)).toBeGreaterThan(resumedAt);
      }
      expect(await service.schedules.fire(paused.id, pausedAt + 1000)).toBe('paused');
      expect(errors).toEqual([]);
      expect(two.errors).toEqual([]);
    } finally {
      await two.service.stop();
    }
  });
});
