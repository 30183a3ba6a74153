import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { sessionRoutes } from '../server/routes/sessions.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';
import { defineTool, ToolTimeoutError } from './tools.js';

describe.each(backends)('agent run ledger on $name', (backend) => {
  let engine: Engine;
  let app: Hono;
  let effects: string[];
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const send = (event: Record<string, unknown>) =>
    call('POST', '/agent/events', { user_id: 'u-1', source: 'whatsapp_webhook', input_type: 'text', ...event });
  const run = async (id: string) => (await call('GET', `/agent/runs/${id}`)).body;
  const ended = (id: string, timeoutMs = 20_000) =>
    eventually(async () => {
      const r = await run(id);
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    }, timeoutMs);
  /** The run waits for a decision and no pass of it runs (see `suspended` in sessions.int.test.ts: a signal is then seen at once). */
  const waiting = (id: string) =>
    eventually(async () => {
      if ((await run(id)).status !== 'waiting') return false;
      const running = await engine.store.taskList({ queue: 'runledger.runs', state: 'running', limit: 1000 });
      return !running.some((task) => task.orderingKey === id);
    }, 20_000);

  beforeEach(async () => {
    effects = [];
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    const effect = defineTool('effect', {
      risk: 'low',
      timeout: '5s',
      run: async (input: { n: number }, { idempotencyKey }) => (effects.push(idempotencyKey), { done: input.n }),
    });
    const slow = defineTool('slow', {
      risk: 'medium',
      timeout: '150ms',
      run: () => new Promise((resolve) => setTimeout(resolve, 5000)),
    });
    const guarded = defineTool('guarded', {
      risk: 'low',
      approval: true,
      approvalTimeout: '300ms',
      timeout: '1s',
      run: async () => effects.push('guarded'),
    });
    const counter = defineAgent('counter', {
      ledger: {},
      background: async (input: { events: Array<{ payload: { n: number } }> }, ctx) => {
        await ctx.node('work', () => ctx.tool('effect', { n: input.events[0]!.payload.n }));
      },
    });
    const timing = defineAgent('timing', {
      ledger: {},
      background: async (_input, ctx) => {
        const outcome = await ctx.node('call', async () => {
          try {
            await ctx.tool('slow', {});
            return 'answered';
          } catch (error) {
            return error instanceof ToolTimeoutError ? `${error.name}: ${error.message}` : 'other';
          }
        });
        await ctx.node('notify', async () => 'sent', { when: outcome === 'answered' });
        await ctx.node('guard', () => ctx.tool('guarded', {}));
      },
    });
    const flaky = defineAgent('flaky', {
      ledger: { retry: { maxAttempts: 3, backoff: { base: '300ms', factor: 2 } } },
      background: async (_input, ctx) => {
        await ctx.node('call', async ({ attempt }) => {
          throw new Error(`upstream 503 on attempt ${attempt}`);
        });
      },
    });
    const batching = defineAgent('batching', {
      ledger: { arrival: 'coalesce' },
      background: async (input: { events: Array<{ payload: { text: string; sleep_ms?: number } }> }, ctx) => {
        await ctx.node('answer', async () => {
          await new Promise((resolve) => setTimeout(resolve, input.events[0]!.payload.sleep_ms ?? 0));
          return input.events.map((e) => e.payload.text);
        });
      },
    });
    const service = sessions(engine, engine.store, {
      agents: [counter, timing, flaky, batching],
      tools: [effect, slow, guarded],
    });
    const ledger = new AgentLedger(engine, engine.store, service, { defaultAgent: 'sample-agent' });
    app = mount(new Hono(), [...agentRoutes(ledger), ...sessionRoutes(service)]);
    close = t.close;
  });
  afterEach(() => close());

  it('takes a webhook delivered twice, and 20 times at once, as one event and one run with one set of tool effects', async () => {
    const first = await send({
      conversation_id: 'c-dup',
      idempotency_key: 'wamid.1',
      agent: 'counter',
      payload: { n: 1 },
    });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({
      event_id: expect.stringMatching(/^evt_/),
      run_id: expect.stringMatching(/^ses_/),
      duplicate: false,
      decision: 'queued',
    });
    const again = await send({
      conversation_id: 'c-dup',
      idempotency_key: 'wamid.1',
      agent: 'counter',
      payload: { n: 1 },
    });
    expect(again).toEqual({ status: 200, body: { ...first.body, duplicate: true } });

    const burst = await Promise.all(
      Array.from({ length: 20 }, () =>
        send({ conversation_id: 'c-burst', idempotency_key: 'wamid.2', agent: 'counter', payload: { n: 2 } }),
      ),
    );
    expect(burst.filter((r) => r.status === 202)).toHaveLength(1);
    expect(burst.filter((r) => r.status === 200)).toHaveLength(19);
    expect(new Set(burst.map((r) => `${r.body.event_id} ${r.body.run_id}`)).size).toBe(1);
    // without a key, the key is a hash of (source, conversation, payload): key order in the payload does not matter
    const unkeyed = await Promise.all([
      send({ conversation_id: 'c-hash', agent: 'counter', payload: { n: 3, m: 'x' } }),
      send({ conversation_id: 'c-hash', agent: 'counter', payload: { m: 'x', n: 3 } }),
    ]);
    expect(unkeyed.map((r) => r.status).sort()).toEqual([200, 202]);
    expect(unkeyed[0]!.body.run_id).toBe(unkeyed[1]!.body.run_id);

    for (const id of [first.body.run_id, burst[0]!.body.run_id, unkeyed[0]!.body.run_id])
      expect((await ended(id)).status).toBe('success');
    for (const conversation of ['c-dup', 'c-burst', 'c-hash'])
      expect((await call('GET', `/conversations/${conversation}/runs`)).body.runs).toHaveLength(1);
    expect(effects.sort()).toEqual(
      [
        `${first.body.run_id}:work:effect#1`,
        `${burst[0]!.body.run_id}:work:effect#1`,
        `${unkeyed[0]!.body.run_id}:work:effect#1`,
      ].sort(),
    );
    const event = (await call('GET', `/agent/events/${first.body.event_id}`)).body;
    expect(event).toMatchObject({
      id: first.body.event_id,
      idempotency_key: 'wamid.1',
      status: 'done',
      attempt_count: 1,
      run_id: first.body.run_id,
      decision: 'queued',
      conversation_id: 'c-dup',
    });
    expect(Date.parse(event.available_at)).toBeLessThanOrEqual(Date.parse(event.updated_at));
  });

  it('runs the sample agent: nodes classify → act → reply, a blocked refund, approval, done; GET /sessions/{id} is the same run', async () => {
    const { body: sent } = await send({
      conversation_id: 'c-refund',
      payload: { text: 'I want a refund for order 1234' },
    });
    await waiting(sent.run_id);
    const pending = (await call('GET', '/agent/approvals?status=pending')).body.tool_calls;
    expect(pending).toHaveLength(1);
    expect(pending[0]).toMatchObject({
      run_id: sent.run_id,
      tool_name: 'issue_refund',
      risk_level: 'high',
      status: 'blocked',
      approval_status: 'pending',
      input: { order_id: '1234', amount: 42 },
    });
    const approved = await call('POST', `/agent/tool-calls/${pending[0].id}/approve`, {
      by: 'ana',
      reason: 'customer is right',
    });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({
      duplicate: false,
      tool_call: { approval_status: 'approved', approval_by: 'ana' },
    });
    const done = await ended(sent.run_id);
    expect(done).toMatchObject({
      status: 'success',
      conversation_id: 'c-refund',
      user_id: 'u-1',
      agent: 'sample-agent',
      input_class: 'text',
      graph_version: 'v1',
      event_id: sent.event_id,
      failure_reason: null,
    });
    expect(done.steps.map((s: any) => [s.node, s.status])).toEqual([
      ['classify', 'ok'],
      ['act', 'ok'],
      ['reply', 'ok'],
    ]);
    expect(done.checkpoints.map((c: any) => c.node)).toEqual(['classify', 'act', 'reply']);
    expect(done.checkpoints[2].state).toEqual({ text: 'Refunded 42 for order 1234.' });
    expect(done.steps[1].input_snapshot).toEqual({ intent: 'refund', messages: 1 });
    expect(done.steps.every((s: any) => s.latency_ms >= 0)).toBe(true);
    expect(done.steps[0].latency_ms).toBeGreaterThanOrEqual(150);
    expect(done.tool_calls.map((c: any) => [c.tool_name, c.risk_level, c.status, c.approval_status])).toEqual([
      ['lookup_order', 'low', 'ok', null],
      ['issue_refund', 'high', 'ok', 'approved'],
    ]);
    expect(done.tool_calls[1].external_idempotency_key).toBe(`${sent.run_id}:act:issue_refund#1`);
    expect(done.tool_calls[1].output).toMatchObject({ refund_id: expect.stringMatching(/^rf_/), amount: 42 });
    // classify asked the offline model through ctx.generate: a step of the run with its usage, whose tokens (20 in,
    // 15 out) count against the sample's budget without the agent reporting them
    const generated = (await engine.journal.readStream(`run:${sent.run_id}`)).find(
      (e) => e.type === RUN_EVENT.stepCompleted && (e.data as { name: string }).name === 'generate:intent',
    );
    expect((generated!.data as { output: unknown }).output).toMatchObject({
      text: 'You said: "I want a refund for order 1234" (offline model; 2 messages of context)',
      usage: { model: 'offline', inputTokens: 20, outputTokens: 15, promptHash: expect.stringMatching(/^sha256:/) },
    });
    expect((await engine.run(sent.run_id)).usage).toMatchObject({ tokens: 35 });
    expect((await call('GET', `/sessions/${sent.run_id}`)).body).toMatchObject({
      session_id: sent.run_id,
      status: 'success',
      agent: 'sample-agent',
    });
    // the same decision again is harmless, a different one is a conflict
    expect(await call('POST', `/agent/tool-calls/${pending[0].id}/approve`, { by: 'bob' })).toMatchObject({
      status: 200,
      body: { duplicate: true },
    });
    expect((await call('POST', `/agent/tool-calls/${pending[0].id}/reject`, { by: 'bob' })).status).toBe(409);
    expect((await call('POST', `/agent/tool-calls/${done.tool_calls[0].id}/approve`, { by: 'bob' })).status).toBe(409);
    expect((await call('POST', '/agent/tool-calls/tc_nope/approve', { by: 'bob' })).status).toBe(404);
    expect((await call('GET', '/agent/approvals')).body.tool_calls).toEqual([]);
  });

  it('blocks a rejected refund for good: the agent gets a typed error it handles; approving afterwards is 409', async () => {
    const { body: sent } = await send({ conversation_id: 'c-reject', payload: { text: 'refund please' } });
    await waiting(sent.run_id);
    const [call1] = (await call('GET', '/agent/approvals')).body.tool_calls;
    expect(
      (await call('POST', `/agent/tool-calls/${call1.id}/reject`, { by: 'ana', reason: 'outside the refund window' }))
        .status,
    ).toBe(200);
    const done = await ended(sent.run_id);
    expect(done.status).toBe('success');
    expect(done.tool_calls[1]).toMatchObject({
      tool_name: 'issue_refund',
      status: 'blocked',
      approval_status: 'rejected',
      approval_by: 'ana',
      error: 'rejected by ana: outside the refund window',
      started_at: null,
    });
    expect(done.checkpoints[1].state.blocked).toBe('issue_refund was rejected by ana: outside the refund window');
    expect(done.checkpoints[2].state.text).toContain('was not approved');
    const late = await call('POST', `/agent/tool-calls/${call1.id}/approve`, { by: 'bob' });
    expect(late.status).toBe(409);
    expect(late.body.error.message).toContain('already rejected by ana');
  });

  it('ends a tool that passes its timeout as timeout with a typed error, records a skipped node, and expires an approval nobody gives', async () => {
    const { body: sent } = await send({ conversation_id: 'c-timeout', agent: 'timing', payload: {} });
    const done = await ended(sent.run_id);
    expect(done.status).toBe('failed');
    expect(done.failure_reason).toBe('ToolBlockedError: the approval of guarded expired after 300 ms');
    expect(done.tool_calls.map((c: any) => [c.tool_name, c.status, c.approval_status])).toEqual([
      ['slow', 'timeout', null],
      ['guarded', 'blocked', 'expired'],
    ]);
    expect(done.tool_calls[0].error).toMatch(/^TimeoutError: /);
    expect(done.checkpoints[0].state).toBe('ToolTimeoutError: slow did not finish within 150 ms');
    expect(done.steps.map((s: any) => [s.node, s.status])).toEqual([
      ['call', 'ok'],
      ['notify', 'skipped'],
      ['guard', 'error'],
    ]);
    expect(effects).toEqual([]);
    const guarded = done.tool_calls[1];
    expect((await call('POST', `/agent/tool-calls/${guarded.id}/approve`, { by: 'ana' })).status).toBe(409);
    expect((await call('GET', `/agent/events/${sent.event_id}`)).body).toMatchObject({
      status: 'failed',
      last_error: done.failure_reason,
    });
  });

  it('retries a failing node with growing available_at, then fails the event and the run with the reason', async () => {
    const { body: sent } = await send({ conversation_id: 'c-flaky', agent: 'flaky', payload: {} });
    const seen = new Set<string>();
    const done = await eventually(async () => {
      const event = (await call('GET', `/agent/events/${sent.event_id}`)).body;
      if (event.status === 'pending' && event.attempt_count > 0)
        seen.add(`${event.attempt_count} ${event.available_at}`);
      return event.status === 'failed' ? event : undefined;
    }, 20_000);
    expect(done).toMatchObject({ status: 'failed', attempt_count: 3, last_error: 'Error: upstream 503 on attempt 3' });
    const r = await run(sent.run_id);
    expect(r).toMatchObject({ status: 'failed', failure_reason: 'Error: upstream 503 on attempt 3' });
    expect(r.steps.map((s: any) => [s.attempt, s.status, s.error])).toEqual(
      [1, 2, 3].map((n) => [n, 'error', `Error: upstream 503 on attempt ${n}`]),
    );
    // the journal's failures carry the backoff the event's available_at showed: it grows
    const failures = (await engine.journal.readStream(`run:${sent.run_id}`))
      .filter((e) => e.type === 'node.failed')
      .map((e) => ({ at: e.timestamp, ...(e.data as { retryAt: number | null }) }));
    expect(failures.map((f) => f.retryAt === null)).toEqual([false, false, true]);
    const delays = failures.slice(0, 2).map((f) => f.retryAt! - f.at);
    expect(delays[1]!).toBeGreaterThan(delays[0]!);
    expect(failures[1]!.retryAt!).toBeGreaterThan(failures[0]!.retryAt!);
    for (const s of seen)
      expect([1, 2].map((n) => `${n} ${new Date(failures[n - 1]!.retryAt!).toISOString()}`)).toContain(s);
  });

  it('coalesces the events that arrive while the conversation is busy into its waiting run, journaling each decision', async () => {
    const first = (await send({ conversation_id: 'c-co', agent: 'batching', payload: { text: 'one', sleep_ms: 1500 } }))
      .body;
    await eventually(async () => (await run(first.run_id)).status === 'running');
    const later = [];
    for (const text of ['two', 'three', 'four'])
      later.push((await send({ conversation_id: 'c-co', agent: 'batching', payload: { text } })).body);
    expect([first, ...later].map((r) => r.decision)).toEqual(['queued', 'queued', 'coalesced', 'coalesced']);
    expect(new Set(later.map((r) => r.run_id)).size).toBe(1);
    const second = await ended(later[0]!.run_id);
    expect(second.events.map((e: any) => e.payload.text)).toEqual(['two', 'three', 'four']);
    expect(second.checkpoints[0].state).toEqual(['two', 'three', 'four']);
    const runs = (await call('GET', '/conversations/c-co/runs')).body.runs;
    expect(runs.map((r: any) => r.id)).toEqual([first.run_id, later[0]!.run_id]);
    expect(Date.parse(runs[1].started_at)).toBeGreaterThanOrEqual(Date.parse(runs[0].ended_at));
    const decisions = (await engine.journal.readStream('agent-conversation:c-co')).map((e) => e.type);
    expect(decisions).toEqual([
      'agent.event.queued',
      'agent.run.started',
      'agent.event.queued',
      'agent.event.coalesced',
      'agent.event.coalesced',
      'agent.run.started',
    ]);
    // after the run started, a new event starts a new run
    expect((await send({ conversation_id: 'c-co', agent: 'batching', payload: { text: 'five' } })).body.decision).toBe(
      'queued',
    );
  });

  it('lists runs newest first with filters and a cursor, and answers bad input with the field and the limit', async () => {
    const ids = [];
    for (const [conversation, user] of [
      ['c-a', 'u-1'],
      ['c-b', 'u-2'],
      ['c-a', 'u-2'],
    ] as const)
      ids.push(
        (await send({ conversation_id: conversation, user_id: user, agent: 'counter', payload: { n: ids.length } }))
          .body.run_id,
      );
    const all = (await call('GET', '/agent/runs?limit=2')).body;
    expect(all.runs.map((r: any) => r.id)).toEqual([ids[2], ids[1]]);
    expect((await call('GET', `/agent/runs?limit=2&cursor=${all.next_cursor}`)).body).toMatchObject({
      runs: [{ id: ids[0] }],
      next_cursor: null,
    });
    expect((await call('GET', '/agent/runs?conversation_id=c-a&user_id=u-2')).body.runs.map((r: any) => r.id)).toEqual([
      ids[2],
    ]);
    for (const id of ids) await ended(id);
    expect((await call('GET', '/agent/runs?status=success')).body.runs).toHaveLength(3);
    const bad = await call('POST', '/agent/events', { user_id: 'u', source: 's', input_type: 't', payload: {} });
    expect(bad.status).toBe(400);
    expect(bad.body.error.problems[0].path).toBe('conversation_id');
    const unknown = await send({ conversation_id: 'c', agent: 'nobody', payload: {} });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.problems[0].path).toBe('agent');
    const big = await send({ conversation_id: 'c', payload: { text: 'x'.repeat(1024 * 1024) } });
    expect(big.status).toBe(413);
    expect(big.body.error.message).toMatch(/1 MiB/);
    expect((await call('GET', '/agent/runs?status=done')).status).toBe(400);
    expect((await call('GET', '/agent/events/evt_nope')).status).toBe(404);
    expect((await call('GET', '/agent/runs')).body.runs).toHaveLength(3);
  });
});
