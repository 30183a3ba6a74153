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

// issue 42, point 7: every list is newest first (by creation; ids are ULIDs), and its cursor pages in that order
describe.each(backends)('list order of workflows, rules and schedules on $name', (backend) => {
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
  /** Every page of a list, following `last_key`: the ids in the order the pages gave them. */
  const pages = async (path: string, field: string) => {
    const ids: string[] = [];
    const sizes: number[] = [];
    for (let key: string | null = null; ; ) {
      const { status, body } = await call('GET', `${path}?limit=2${key ? `&last_key=${key}` : ''}`);
      expect(status).toBe(200);
      ids.push(...body[field].map((item: { id: string }) => item.id));
      sizes.push(body[field].length);
      key = body.last_key;
      if (!key) return { ids, sizes };
    }
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

  it('lists workflows, rules and schedules newest first, page by page in that order', async () => {
    const made: Record<string, string[]> = { workflows: [], rules: [], schedules: [] };
    // a rule's or schedule's target takes a stored workflow by id (a bare name is a code workflow's)
    const target = { workflow: (await call('POST', '/workflows', { name: 'order-target', steps })).body.id as string };
    for (const n of [1, 2, 3, 4, 5]) {
      made.workflows!.push((await call('POST', '/workflows', { name: `order-${n}`, steps })).body.id);
      const rule = await call('POST', '/rules', { name: `rule-${n}`, pattern: { source: [`s${n}`] }, target });
      expect(rule.status, JSON.stringify(rule.body)).toBe(201);
      made.rules!.push(rule.body.id);
      const schedule = await call('POST', '/schedules', { cron: '0 0 * * *', timezone: 'UTC', target });
      expect(schedule.status, JSON.stringify(schedule.body)).toBe(201);
      made.schedules!.push(schedule.body.id);
    }
    for (const field of ['workflows', 'rules', 'schedules']) {
      const { ids, sizes } = await pages(`/${field}`, field);
      const mine = ids.filter((id) => made[field]!.includes(id));
      expect(mine, field).toEqual([...made[field]!].reverse());
      // newest first overall: each page's ids descend, and the whole listing is the sorted ids, descending
      expect(ids, field).toEqual([...ids].sort().reverse());
      expect(new Set(ids).size, field).toBe(ids.length);
      expect(
        sizes.slice(0, -1).every((size) => size === 2),
        field,
      ).toBe(true);
    }
  });
});
