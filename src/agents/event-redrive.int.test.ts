import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';

describe.each(backends)('POST /agent/events/{id}/redrive on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;
  /** Conversations whose upstream is down: their runs fail (one attempt, no retry) until it is back. */
  let down: Set<string>;
  let handled: string[];

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const send = async (conversation: string, text: string, source = 'whatsapp_webhook') => {
    const res = await call('POST', '/agent/events', {
      conversation_id: conversation,
      user_id: 'u-1',
      source,
      input_type: 'text',
      payload: { text },
    });
    expect(res.status).toBe(202);
    return res.body as { event_id: string; run_id: string };
  };
  const event = async (id: string) => (await call('GET', `/agent/events/${id}`)).body;
  const settled = (id: string, status: 'done' | 'failed') =>
    eventually(async () => ((await event(id)).status === status ? event(id) : undefined), 20_000);

  beforeEach(async () => {
    down = new Set();
    handled = [];
    const t = await testEngine(backend, { pollMs: 100 });
    const fragile = defineAgent('fragile', {
      ledger: { retry: { maxAttempts: 1 } },
      background: async (input: { conversation_id: string; events: Array<{ payload: { text: string } }> }, ctx) => {
        await ctx.node('call', async () => {
          if (down.has(input.conversation_id)) throw new Error(`upstream of ${input.conversation_id} is down`);
          handled.push(input.events.map((e) => e.payload.text).join('+'));
          return 'ok';
        });
      },
    });
    const ledger = new AgentLedger(
      t.engine,
      t.engine.store,
      sessions(t.engine, t.engine.store, { agents: [fragile], tools: [] }),
      {
        defaultAgent: 'fragile',
      },
    );
    app = mount(new Hono(), agentRoutes(ledger));
    close = t.close;
  });
  afterEach(() => close());

  it('puts a failed event back with a fresh attempt count; a new run handles it and names the old one, whose rows stay; 409 for an event not failed', async () => {
    down.add('c-1');
    const first = await send('c-1', 'one');
    const failed = await settled(first.event_id, 'failed');
    expect(failed).toMatchObject({
      attempt_count: 1,
      run_id: first.run_id,
      last_error: expect.stringContaining('upstream of c-1 is down'),
    });
    const oldRun = (await call('GET', `/agent/runs/${first.run_id}`)).body;
    expect(oldRun).toMatchObject({
      status: 'failed',
      retry_of: null,
      steps: [expect.objectContaining({ node: 'call', status: 'error' })],
    });

    down.delete('c-1');
    const redriven = await call('POST', `/agent/events/${first.event_id}/redrive`, {
      by: 'ana',
      reason: 'upstream is back',
    });
    expect(redriven.status).toBe(200);
    expect(redriven.body).toMatchObject({
      run_id: expect.stringMatching(/^ses_/),
      retry_of: first.run_id,
      event: { id: first.event_id, attempt_count: 0, last_error: null },
    });
    const newRunId = redriven.body.run_id as string;
    expect(newRunId).not.toBe(first.run_id);
    // again at once: it is no longer failed
    const again = await call('POST', `/agent/events/${first.event_id}/redrive`, {});
    expect(again.status).toBe(409);
    expect(JSON.stringify(again.body)).toContain('only a failed event can be redriven');

    const done = await settled(first.event_id, 'done');
    expect(done).toMatchObject({ run_id: newRunId, attempt_count: 1, last_error: null });
    expect(handled).toEqual(['one']);
    const newRun = (await call('GET', `/agent/runs/${newRunId}`)).body;
    expect(newRun).toMatchObject({
      status: 'success',
      retry_of: first.run_id,
      event_id: first.event_id,
      conversation_id: 'c-1',
      events: [expect.objectContaining({ id: first.event_id })],
    });
    expect(newRun.steps.map((s: { node: string; status: string }) => [s.node, s.status])).toEqual([['call', 'ok']]);
    // the old attempt's rows stay as they were
    expect((await call('GET', `/agent/runs/${first.run_id}`)).body).toMatchObject({
      status: 'failed',
      event_id: first.event_id,
      steps: oldRun.steps,
      failure_reason: oldRun.failure_reason,
    });

    expect((await call('POST', `/agent/events/${first.event_id}/redrive`)).status).toBe(409);
    expect((await call('POST', '/agent/events/evt_01J00000000000000000000000/redrive')).status).toBe(404);
    const badBy = await call('POST', `/agent/events/${first.event_id}/redrive`, { by: '' });
    expect(badBy.status).toBe(400);
    expect(JSON.stringify(badBy.body)).toContain('by');
  });

  it('runs the redriven event next when the later arrivals already ran, ahead of those after the redrive (its place when they wait: redrive-order.int.test.ts)', async () => {
    down.add('c-2');
    const a = await send('c-2', 'a');
    await settled(a.event_id, 'failed');
    down.delete('c-2');
    const b = await send('c-2', 'b');
    await settled(b.event_id, 'done');
    const { run_id } = (await call('POST', `/agent/events/${a.event_id}/redrive`)).body;
    const c = await send('c-2', 'c');
    await settled(c.event_id, 'done');
    await settled(a.event_id, 'done');
    expect(handled).toEqual(['b', 'a', 'c']);
    const runs = (await call('GET', '/conversations/c-2/runs')).body.runs.map((r: { id: string; status: string }) => [
      r.id,
      r.status,
    ]);
    expect(runs).toEqual([
      [a.run_id, 'failed'],
      [b.run_id, 'success'],
      [run_id, 'success'],
      [c.run_id, 'success'],
    ]);
  });

  it('redrives every failed event a filter matches, and only failed ones', async () => {
    for (const c of ['c-x', 'c-y']) down.add(c);
    const x1 = await send('c-x', 'x1', 'email');
    const x2 = await send('c-x', 'x2', 'whatsapp_webhook');
    const y1 = await send('c-y', 'y1', 'email');
    for (const e of [x1, x2, y1]) await settled(e.event_id, 'failed');
    const ok = await send('c-z', 'z1', 'email');
    await settled(ok.event_id, 'done');
    for (const c of ['c-x', 'c-y']) down.delete(c);

    expect((await call('POST', '/agent/events/redrive', { status: 'done' })).status).toBe(400);
    expect((await call('POST', '/agent/events/redrive', { status: 'failed', colour: 'red' })).status).toBe(400);
    expect(
      await call('POST', '/agent/events/redrive', {
        status: 'failed',
        conversation_id: 'c-x',
        source: 'email',
        by: 'ops',
      }),
    ).toEqual({ status: 200, body: { redriven: 1 } });
    await settled(x1.event_id, 'done');
    expect((await event(x2.event_id)).status).toBe('failed');
    expect(await call('POST', '/agent/events/redrive', { status: 'failed' })).toEqual({
      status: 200,
      body: { redriven: 2 },
    });
    for (const e of [x2, y1]) await settled(e.event_id, 'done');
    expect(await call('POST', '/agent/events/redrive', { status: 'failed' })).toEqual({
      status: 200,
      body: { redriven: 0 },
    });
    expect(handled.sort()).toEqual(['x1', 'x2', 'y1', 'z1']);
  });
});
