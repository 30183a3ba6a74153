import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assemble, type App } from '../app/assemble.js';
import { offlineModel } from '../models/offline.js';
import type { Engine } from '../engine.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { testEngine } from '../testing/engine.js';
import { createApp } from './app.js';

const quick = workflow('quick', async (ctx) => ctx.step('one', async () => 1));

/** Every list of the API that continues from a cursor, with the query field that carries it. */
const LISTS: [path: string, field: string][] = [
  ['/runs', 'last_key'],
  ['/runs?order=created', 'last_key'],
  ['/tasks', 'last_key'],
  ['/dlq', 'last_key'],
  ['/workflows', 'last_key'],
  ['/workflows/{wf}/executions', 'last_key'],
  ['/events', 'last_key'],
  ['/rules', 'last_key'],
  ['/schedules', 'last_key'],
  ['/agent/runs', 'cursor'],
  ['/agent/events', 'cursor'],
  ['/conversations/c1/runs', 'cursor'],
  ['/agent/approvals', 'cursor'],
  ['/channels', 'after'],
  ['/channels/c1/messages', 'after'],
  ['/channels/c1/messages', 'before'],
  ['/runs/{run}/events', 'after'],
  ['/workflows/{wf}/executions/{ex}/events', 'after'],
  ['/runs/{run}/events/stream', 'after'],
  ['/events/stream', 'after'],
];

describe.each(backends)('list cursors on $name', (backend) => {
  let engine: Engine;
  let services: App;
  let app: Hono;
  let close: () => Promise<void>;
  const ids: Record<string, string> = {};
  const get = async (path: string) => {
    const res = await app.fetch(
      new Request(`http://api${path.replace(/\{(\w+)\}/g, (_, name: string) => ids[name]!)}`),
    );
    // a live feed does not end: its status is the answer
    if (!res.headers.get('content-type')?.includes('json')) {
      await res.body?.cancel();
      return { status: res.status, body: null };
    }
    return { status: res.status, body: await res.json() };
  };

  beforeAll(async () => {
    const t = await testEngine(backend, { workflows: [quick] });
    engine = t.engine;
    services = await assemble(engine, {
      secretKey: randomBytes(32),
      allow: [],
      logger: pino({ level: 'silent' }),
      chatModel: offlineModel(),
      workers: false,
    });
    app = createApp({ engine, ...services, uiDir: null });
    close = async () => {
      await services.stop();
      await t.close();
    };
    ids.run = (await engine.start(quick, {})).id;
    const wf = await services.workflows.definitions.create({
      name: 'one',
      steps: [{ id: 'note', type: 'log', config: { message: 'hi' } }],
    });
    ids.wf = wf.id;
    ids.ex = (await services.workflows.executions.execute(wf.id, {})).execution_id;
    await services.channels.post('c1', { sender_id: 'u1', role: 'user', content: 'hello' });
  });
  afterAll(() => close());

  it.each(LISTS)('answers %s with a garbage %s 400, naming the field', async (path, field) => {
    const listed = await get(path);
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    const garbage = await get(`${path}${path.includes('?') ? '&' : '?'}${field}=garbage`);
    expect([garbage.status, garbage.body?.error?.problems?.[0]?.path]).toEqual([
      400,
      expect.stringMatching(new RegExp(`^(query\\.)?${field}$`)),
    ]);
  });

  it('still pages /runs by the last_key it gave, for generated and chosen run ids alike', async () => {
    await engine.start(quick, {}, { id: 'my-own-run-id' });
    const first = await get('/runs?limit=1');
    expect(first.body.last_key).toEqual(expect.any(String));
    const seen = [first.body.runs[0].id];
    for (let key = first.body.last_key; key !== null; ) {
      const next = await get(`/runs?limit=1&last_key=${encodeURIComponent(key)}`);
      expect(next.status).toBe(200);
      seen.push(...next.body.runs.map((r: { id: string }) => r.id));
      key = next.body.last_key;
    }
    expect(seen).toContain('my-own-run-id');
    expect(seen).toContain(ids.run);
  });
});
