import { randomBytes } from 'node:crypto';
import type { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storedWorkflows } from '../app/workflows.js';
import { createApp } from '../server/app.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';

/** A transform that reads `trigger.name`: an input without one fails its execution. */
const greet = (name: string) => ({
  name,
  steps: [{ id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name}}' } }],
});
/** Greets, then waits for a callback that never comes: an input without a name fails, the others run until cancelled. */
const waiting = (name: string) => ({
  name,
  steps: [
    { id: 'greet', type: 'transform', config: { template: 'Hello {{trigger.name}}' } },
    { id: 'approve', type: 'wait_for_callback', timeout_seconds: 600, config: {} },
  ],
});

describe.each(backends)('batches of executions (brief 004 §15) on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const save = async (definition: unknown) => {
    const saved = await call('POST', '/workflows', definition);
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    return saved.body.id as string;
  };
  const ended = (id: string) =>
    eventually(
      async () => ((b) => (b.status !== 'running' ? b : undefined))((await call('GET', `/batches/${id}`)).body),
      30_000,
    );

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    app = createApp({ engine: t.engine, workflows: storedWorkflows(t.engine, { secretKey: randomBytes(32) }) });
    close = t.close;
  });
  afterEach(async () => close());

  it('runs one execution per input and ends partial when some fail, with the right counts', async () => {
    const wid = await save(greet('greet-20'));
    const inputs = Array.from({ length: 20 }, (_, i) => (i === 4 || i === 13 ? { other: i } : { name: `n${i}` }));
    const started = await call('POST', `/workflows/${wid}/batches`, { inputs });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toMatchObject({ workflow_id: wid, total: 20, duplicate: false });
    expect(new Set(started.body.execution_ids).size).toBe(20);

    const batch = await ended(started.body.batch_id);
    expect(batch).toMatchObject({
      status: 'partial',
      progress: { ended: 20, total: 20 },
      counts: { success: 18, failed: 2, running: 0, pending: 0, cancelled: 0 },
      execution_ids: started.body.execution_ids,
      cancel_reason: null,
    });
    // each execution ran its own input, in the order of the inputs
    const fifth = await call('GET', `/workflows/${wid}/executions/${started.body.execution_ids[4]}`);
    expect(fifth.body).toMatchObject({ status: 'failed', trigger_type: 'batch', trigger_data: { other: 4 } });
    const first = await call('GET', `/workflows/${wid}/executions/${started.body.execution_ids[0]}`);
    expect(first.body).toMatchObject({ status: 'success', trigger_data: { name: 'n0' } });
    expect((await call('GET', `/workflows/${wid}/executions?limit=100`)).body.count).toBe(20);
  });

  it('ends success when every execution succeeds, and failed when none does', async () => {
    const wid = await save(greet('greet-all'));
    const good = await call('POST', `/workflows/${wid}/batches`, { inputs: [{ name: 'a' }, { name: 'b' }] });
    const bad = await call('POST', `/workflows/${wid}/batches`, { inputs: [{}, {}] });
    expect(await ended(good.body.batch_id)).toMatchObject({ status: 'success', counts: { success: 2 } });
    expect(await ended(bad.body.batch_id)).toMatchObject({ status: 'failed', counts: { failed: 2 } });
  });

  it('cancels mid-batch every execution not ended, leaving the ended ones; a cancel of an ended batch is a 409', async () => {
    const wid = await save(waiting('wait-5'));
    const inputs = [{ name: 'a' }, {}, { name: 'c' }, {}, { name: 'e' }];
    const started = await call('POST', `/workflows/${wid}/batches`, { inputs });
    const id = started.body.batch_id as string;
    const ids = started.body.execution_ids as string[];
    const status = async (i: number) => (await call('GET', `/workflows/${wid}/executions/${ids[i]}`)).body.status;
    // the two without a name have failed; the three others wait for their callbacks
    await eventually(async () => (await status(1)) === 'failed' && (await status(3)) === 'failed', 20_000);
    expect((await call('GET', `/batches/${id}`)).body).toMatchObject({
      status: 'running',
      counts: { failed: 2, running: 3 },
      progress: { ended: 2, total: 5 },
    });
    const cancel = await call('POST', `/batches/${id}/cancel`, { reason: 'wrong inputs' });
    expect(cancel).toMatchObject({ status: 202, body: { batch_id: id, cancelled: 3 } });
    const batch = await ended(id);
    expect(batch).toMatchObject({
      status: 'cancelled',
      cancel_reason: 'wrong inputs',
      counts: { cancelled: 3, failed: 2, success: 0 },
      progress: { ended: 5, total: 5 },
    });
    const one = await call('GET', `/workflows/${wid}/executions/${ids[2]}`);
    expect(one.body).toMatchObject({ status: 'cancelled', cancel_reason: 'wrong inputs', cancelled_by: 'user' });
    expect((await call('GET', `/workflows/${wid}/executions/${ids[1]}`)).body).toMatchObject({
      status: 'failed',
      cancel_reason: null,
    });
    expect((await call('POST', `/batches/${id}/cancel`, {})).status).toBe(409);
  });

  it('answers a repeated idempotency key with the first batch, starting nothing', async () => {
    const wid = await save(greet('greet-key'));
    const body = { inputs: [{ name: 'a' }, { name: 'b' }, { name: 'c' }], idempotency_key: 'import-2026-11-28' };
    const first = await call('POST', `/workflows/${wid}/batches`, body);
    const again = await call('POST', `/workflows/${wid}/batches`, body);
    const racing = await Promise.all([1, 2, 3].map(() => call('POST', `/workflows/${wid}/batches`, body)));
    expect(first.status).toBe(202);
    expect(again).toMatchObject({ status: 200, body: { batch_id: first.body.batch_id, duplicate: true } });
    expect(again.body.execution_ids).toEqual(first.body.execution_ids);
    for (const r of racing) expect(r.body.batch_id).toBe(first.body.batch_id);
    expect((await call('GET', '/batches')).body.count).toBe(1);
    expect((await call('GET', `/workflows/${wid}/executions?limit=100`)).body.count).toBe(3);
  });

  it('lists batches newest first, a page at a time', async () => {
    const wid = await save(greet('greet-list'));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await call('POST', `/workflows/${wid}/batches`, { inputs: [{ name: `${i}` }] })).body.batch_id);
    const page1 = (await call('GET', '/batches?limit=2')).body;
    expect(page1.batches.map((b: { batch_id: string }) => b.batch_id)).toEqual([ids[2], ids[1]]);
    const page2 = (await call('GET', `/batches?limit=2&last_key=${page1.last_key}`)).body;
    expect(page2).toMatchObject({ count: 1, last_key: null, batches: [{ batch_id: ids[0] }] });
  });

  it('answers bad input with a 400 naming the field, and starts nothing', async () => {
    const wid = await save(greet('greet-bad'));
    const post = (body: unknown) => call('POST', `/workflows/${wid}/batches`, body);
    const cases: Array<[unknown, string]> = [
      [{ inputs: [] }, 'inputs'],
      [{ inputs: Array.from({ length: 1001 }, () => ({})) }, 'inputs'],
      [{ inputs: [{ name: 'a' }, 'b'] }, 'inputs'],
      [{}, 'inputs'],
      [{ inputs: [{}], extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const answer = await post(body);
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(JSON.stringify(answer.body.error)).toContain(field);
    }
    expect((await call('POST', '/workflows/wf_nope/batches', { inputs: [{}] })).status).toBe(404);
    expect((await call('GET', '/batches/bt_nope')).status).toBe(404);
    expect((await call('GET', '/batches')).body.count).toBe(0);
  });
});
