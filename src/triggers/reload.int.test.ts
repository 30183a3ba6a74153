import { randomBytes } from 'node:crypto';
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
import { createRunStarter, runIdFor } from './starter.js';

// two versions of one workflow, as `runledger dev` registers them after an edit
const greetV1 = workflow('greet', { version: '1' }, async () => 'hello from v1');
const greetV2 = workflow('greet', { version: '2' }, async () => 'hello from v2');
const added = workflow('added', async () => 'added later');

describe.each(backends)('rules and schedules after a reload on $name', (backend) => {
  let engine: Engine;
  let service: TriggerService;
  let app: Hono;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const routed = (id: string) =>
    eventually(async () => ((await call('GET', `/events/${id}`)).body.routed ? true : undefined));

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    engine.register(greetV1);
    const workflows = storedWorkflows(engine, { secretKey: randomBytes(32) });
    const starter = createRunStarter({ engine, store: engine.store, workflows });
    service = triggers(engine, engine.store, { starter, schedulerEnabled: false });
    app = mount(new Hono(), triggerRoutes(service));
    await service.start();
    close = async () => {
      await service.stop();
      await t.close();
    };
  });
  afterEach(() => close());

  it('starts the version registered last, and a workflow registered after the trigger service started', async () => {
    const rule = (
      await call('POST', '/rules', { name: 'hi', pattern: { source: ['app'] }, target: { workflow: 'greet' } })
    ).body as { id: string };
    const schedule = (await call('POST', '/schedules', { cron: '0 * * * *', target: { workflow: 'greet' } })).body as {
      id: string;
    };
    const before = await call('POST', '/rules', {
      name: 'new',
      pattern: { source: ['app'] },
      target: { workflow: 'added' },
    });
    expect(before.status).toBe(400);
    expect(before.body.error.problems).toEqual([
      { path: 'target.workflow', message: expect.stringMatching(/code workflows: greet\): 'added'$/) },
    ]);
    const builtIn = await call('POST', '/schedules', { cron: '0 * * * *', target: { workflow: 'runledger.stored' } });
    expect(builtIn.body.error.problems[0].path).toBe('target.workflow');

    engine.register(greetV2, added);
    const later = await call('POST', '/rules', {
      name: 'new',
      pattern: { source: ['app'] },
      target: { workflow: 'added' },
    });
    expect(later.status).toBe(201);
    await call('POST', '/events', { id: 'e-1', source: 'app', 'detail-type': 'saved', detail: {} });
    await routed('e-1');
    expect(await engine.runtime.handle(runIdFor(`e-1:${rule.id}`)).result()).toBe('hello from v2');
    expect(await engine.runtime.handle(runIdFor(`e-1:${later.body.id}`)).result()).toBe('added later');

    expect(await service.schedules.fire(schedule.id, Date.parse('2030-01-01T10:00:00.000Z'))).toBe('fired');
    const [fired] = (await engine.journal.readStream(`schedule-slot:${schedule.id}`, { limit: 10 }))
      .filter((e) => e.type === 'schedule.fired')
      .map((e) => e.data as { run_id: string });
    expect(await engine.runtime.handle(fired!.run_id).result()).toBe('hello from v2');
  });
});
