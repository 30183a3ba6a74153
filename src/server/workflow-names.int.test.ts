import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assemble, type App } from '../app/assemble.js';
import { offlineModel } from '../models/offline.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { createApp } from './app.js';

const steps = [{ id: 'note', type: 'log', config: { message: 'hi' } }];

// issue 42, point 7: a stored workflow's name works wherever its id does
describe.each(backends)('workflow names on $name', (backend) => {
  let services: App;
  let app: Hono;
  let close: () => Promise<void>;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.fetch(
      new Request(`http://api${path}`, {
        method,
        ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      }),
    );
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };
  beforeAll(async () => {
    const t = await testEngine(backend, { workflows: [] });
    services = await assemble(t.engine, {
      secretKey: randomBytes(32),
      allow: [],
      logger: pino({ level: 'silent' }),
      chatModel: offlineModel(),
      workers: false,
    });
    app = createApp({ engine: t.engine, ...services, uiDir: null });
    close = async () => {
      await services.stop();
      await t.close();
    };
  });
  afterAll(() => close());

  it('answers GET, PUT, versions, execute and executions by name, with the id in every record', async () => {
    const created = (await call('POST', '/workflows', { name: 'greet', steps })).body;
    const got = await call('GET', '/workflows/greet');
    expect(got).toMatchObject({ status: 200, body: { id: created.id, name: 'greet', version: 1 } });
    expect(await call('PUT', '/workflows/greet', { name: 'greet', steps, description: 'v2' })).toMatchObject({
      status: 200,
      body: { id: created.id, version: 2 },
    });
    expect(
      (await call('GET', '/workflows/greet/versions')).body.versions.map((v: { version: number }) => v.version),
    ).toEqual([1, 2]);
    const started = await call('POST', '/workflows/greet/execute', { trigger_data: {} });
    expect(started).toMatchObject({ status: 202, body: { workflow_id: created.id, workflow_version: 2 } });
    const listed = await call('GET', '/workflows/greet/executions');
    expect(listed.status).toBe(200);
    expect(listed.body.executions.map((e: { execution_id: string }) => e.execution_id)).toEqual([
      started.body.execution_id,
    ]);
    expect(await call('GET', `/workflows/greet/executions/${started.body.execution_id}`)).toMatchObject({
      status: 200,
      body: { execution_id: started.body.execution_id },
    });
    // the id still works, and answers the same record as the name
    expect((await call('GET', `/workflows/${created.id}`)).body).toEqual((await call('GET', '/workflows/greet')).body);
  });

  it('answers 404 naming an unknown name, and an unknown id as before', async () => {
    for (const path of ['/workflows/nobody', '/workflows/nobody/executions', '/workflows/nobody/versions']) {
      const res = await call('GET', path);
      expect(res.status, path).toBe(404);
      expect(JSON.stringify(res.body), path).toContain('nobody');
    }
    expect((await call('POST', '/workflows/nobody/execute', {})).status).toBe(404);
    const unknownId = await call('GET', '/workflows/wf_01AAAAAAAAAAAAAAAAAAAAAAAA');
    expect(unknownId.status).toBe(404);
    expect(JSON.stringify(unknownId.body)).toContain('wf_01AAAAAAAAAAAAAAAAAAAAAAAA');
  });
});
