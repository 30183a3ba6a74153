import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { operatorRoutes } from '../server/routes/operator.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { type SessionService, sessions } from './service.js';
import { SESSION_WORKFLOW } from './session.js';

/**
 * A redriven event keeps its place in its conversation (ahead of the later arrivals that have not
 * started, behind the run that holds the conversation's turn), and the operator's retry of an agent
 * run is its event's redrive.
 */
describe.each(backends)('a redriven event in its conversation on $name', (backend) => {
  let app: Hono;
  let engine: Engine;
  let close: () => Promise<void>;
  let service: SessionService;
  /** Conversations whose upstream is down: their runs fail (one attempt, no retry). */
  let down: Set<string>;
  /** The order the runs handled their events in. */
  let handled: string[];
  /** An event whose text is `hold` holds its conversation's turn until `release()`. */
  let release: () => void;
  let holding: Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const send = async (conversation: string, text: string) => {
    const res = await call('POST', '/agent/events', {
      conversation_id: conversation,
      user_id: 'u-1',
      source: 'whatsapp_webhook',
      input_type: 'text',
      payload: { text },
    });
    expect(res.status).toBe(202);
    return res.body as { event_id: string; run_id: string };
  };
  const event = async (id: string) => (await call('GET', `/agent/events/${id}`)).body;
  const settled = (id: string, status: 'done' | 'failed') =>
    eventually(async () => ((await event(id)).status === status ? event(id) : undefined), 20_000);
  /** The run of a failed event has ended (its turn passed on): the session journals the failure just before. */
  const ended = (runId: string) =>
    eventually(async () => {
      const r = await engine.run(runId);
      return r.status === 'running' || r.status === 'pending' ? undefined : r;
    }, 20_000);

  beforeEach(async () => {
    down = new Set();
    handled = [];
    let entered!: () => void;
    holding = new Promise((resolve) => {
      entered = resolve;
    });
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    const fragile = defineAgent('fragile', {
      ledger: { retry: { maxAttempts: 1 } },
      background: async (input: { conversation_id: string; events: Array<{ payload: { text: string } }> }, ctx) => {
        const text = input.events.map((e) => e.payload.text).join('+');
        await ctx.node('call', async () => {
          if (down.has(input.conversation_id)) throw new Error(`upstream of ${input.conversation_id} is down`);
          if (text === 'hold') {
            entered();
            await gate;
          }
          handled.push(text);
          return 'ok';
        });
      },
    });
    // its node backs off for an hour after a failure: its run sleeps until then
    const patient = defineAgent('patient', {
      ledger: { retry: { maxAttempts: 5, backoff: { base: '1h' } } },
      background: async (input: { conversation_id: string }, ctx) => {
        await ctx.node('call', async () => {
          if (down.has(input.conversation_id)) throw new Error(`upstream of ${input.conversation_id} is down`);
          return 'ok';
        });
      },
    });
    service = sessions(t.engine, t.engine.store, { agents: [fragile, patient], tools: [] });
    const ledger = new AgentLedger(t.engine, t.engine.store, service, { defaultAgent: 'fragile' });
    app = mount(new Hono(), [...agentRoutes(ledger), ...operatorRoutes(t.engine)]);
    close = t.close;
  });
  afterEach(async () => {
    release();
    await close();
  });

  it('runs ahead of the later arrivals still waiting, behind the run that took the turn, and redriven events among themselves in arrival order', async () => {
    down.add('c-1');
    const e1a = await send('c-1', 'e1a');
    const e1b = await send('c-1', 'e1b');
    for (const e of [e1a, e1b]) await settled(e.event_id, 'failed');
    await ended(e1b.run_id);
    down.delete('c-1');
    // a later arrival takes the turn and holds it; two more wait behind it
    const hold = await send('c-1', 'hold');
    await holding;
    const e2 = await send('c-1', 'e2');
    const e3 = await send('c-1', 'e3');
    expect((await event(e2.event_id)).status).toBe('pending');

    // the later of the two failed events first: the earlier one still goes ahead of it
    const b = await call('POST', `/agent/events/${e1b.event_id}/redrive`, { by: 'ana' });
    const a = await call('POST', `/agent/events/${e1a.event_id}/redrive`, { by: 'ana' });
    expect([a.status, b.status]).toEqual([200, 200]);
    release();
    for (const e of [hold, e1a, e1b, e2, e3]) await settled(e.event_id, 'done');
    expect(handled).toEqual(['hold', 'e1a', 'e1b', 'e2', 'e3']);

    // the ledger says so too: each run started after the one before it ended
    type Times = { id: string; started_at: string; ended_at: string };
    const listed = (await call('GET', '/conversations/c-1/runs')).body.runs as Times[];
    const runs = new Map(listed.map((r) => [r.id, r]));
    const order = [hold.run_id, a.body.run_id, b.body.run_id, e2.run_id, e3.run_id].map((id) => runs.get(id)!);
    for (let i = 1; i < order.length; i++)
      expect(Date.parse(order[i]!.started_at)).toBeGreaterThanOrEqual(Date.parse(order[i - 1]!.ended_at));
    expect([a.body.retry_of, b.body.retry_of]).toEqual([e1a.run_id, e1b.run_id]);
  });

  it('POST /operator/runs/retry on a failed agent run is its event’s redrive: a new run linked by retry_of, the old rows and session stream kept', async () => {
    down.add('c-op');
    const sent = await send('c-op', 'op');
    await settled(sent.event_id, 'failed');
    await ended(sent.run_id);
    const before = {
      run: (await call('GET', `/agent/runs/${sent.run_id}`)).body,
      stream: await engine.journal.readStream(`session:${sent.run_id}`),
    };
    expect(before.run.status).toBe('failed');
    down.delete('c-op');
    const body = { workflow: SESSION_WORKFLOW, status: ['failed'], by: 'ops', reason: 'upstream is back' };

    const dry = await call('POST', '/operator/runs/retry', { ...body, dry_run: true });
    expect(dry.body).toMatchObject({ ids: [sent.run_id], skipped: [], dry_run: true });
    expect((await event(sent.event_id)).status).toBe('failed');

    const retried = await call('POST', '/operator/runs/retry', body);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ action: 'runs.retried', ids: [sent.run_id], skipped: [] });
    const newRunId = retried.body.started[sent.run_id] as string;
    expect(newRunId).toMatch(/^ses_/);

    const done = await settled(sent.event_id, 'done');
    expect(done).toMatchObject({ run_id: newRunId, attempt_count: 1, last_error: null });
    expect(handled).toEqual(['op']);
    expect((await call('GET', `/agent/runs/${newRunId}`)).body).toMatchObject({
      status: 'success',
      retry_of: sent.run_id,
      event_id: sent.event_id,
      conversation_id: 'c-op',
    });
    // the old attempt's rows and its session's events stay as they were (the event is the new run's now)
    expect((await call('GET', `/agent/runs/${sent.run_id}`)).body).toEqual({ ...before.run, events: [] });
    expect(await engine.journal.readStream(`session:${sent.run_id}`)).toEqual(before.stream);
    // journaled as a redrive, with the operator's who and why, on the event's key stream
    const key = (await event(sent.event_id)).idempotency_key as string;
    const redriven = (await engine.journal.readStream(`agent-event:${key}`)).filter(
      (e) => e.type === 'agent.event.redriven',
    );
    expect(redriven.map((e) => e.data)).toEqual([
      { event_id: sent.event_id, run_id: newRunId, retry_of: sent.run_id, by: 'ops', reason: 'upstream is back' },
    ]);
    // nothing is failed any more: nothing matches
    expect((await call('POST', '/operator/runs/retry', body)).body).toMatchObject({ ids: [], started: {} });
  });

  it('POST /operator/runs/retry on an agent run cancelled while it waited for its turn redrives its event too', async () => {
    const hold = await send('c-x', 'hold');
    await holding;
    const waiting = await send('c-x', 'w');
    await engine.runtime.cancel(waiting.run_id, 'not now');
    await settled(waiting.event_id, 'failed');
    await ended(waiting.run_id);
    const before = {
      run: (await call('GET', `/agent/runs/${waiting.run_id}`)).body,
      stream: await engine.journal.readStream(`session:${waiting.run_id}`),
    };
    expect((await engine.run(waiting.run_id)).status).toBe('cancelled');

    const retried = await call('POST', '/operator/runs/retry', { status: ['cancelled'], by: 'ops', reason: 'now' });
    expect(retried.body).toMatchObject({ ids: [waiting.run_id], skipped: [] });
    const newRunId = retried.body.started[waiting.run_id] as string;
    expect(newRunId).toMatch(/^ses_/);
    release();
    for (const e of [hold, waiting]) await settled(e.event_id, 'done');
    expect(handled).toEqual(['hold', 'w']);
    expect(await event(waiting.event_id)).toMatchObject({ run_id: newRunId, status: 'done' });
    expect((await call('GET', `/agent/runs/${newRunId}`)).body).toMatchObject({ retry_of: waiting.run_id });
    expect((await call('GET', `/agent/runs/${waiting.run_id}`)).body).toEqual({ ...before.run, events: [] });
    expect(await engine.journal.readStream(`session:${waiting.run_id}`)).toEqual(before.stream);
  });

  it('skips a cancelled session that no inbound event started (nothing to redrive) instead of starting it again as a bare run', async () => {
    down.add('c-plain');
    const session = await service.create({ agent: 'patient', input: { conversation_id: 'c-plain' } });
    const id = session.session_id;
    await eventually(
      async () => (await call('GET', `/agent/runs/${id}`)).body.status === 'sleeping' || undefined,
      20_000,
    );
    await engine.runtime.cancel(id, 'not now');
    expect((await ended(id)).status).toBe('cancelled');
    const before = await engine.journal.readStream(`session:${id}`);

    const retried = await call('POST', '/operator/runs/retry', { by: 'ops', reason: 'again' });
    expect(retried.body).toMatchObject({
      ids: [],
      skipped: [{ id, why: expect.stringContaining('no inbound event started') }],
      started: {},
    });
    expect(await engine.journal.readStream(`session:${id}`)).toEqual(before);
  });
});
