import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { RUN_EVENT } from '../runtime/events.js';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';
import { defineTool } from './tools.js';

/** A tool that takes a named rate limit: each call waits durably for room, as a step does. */
describe.each(backends)('rate limits on tool calls on $name', (backend) => {
  let engine: Engine;
  let app: Hono;
  let calls: number[];
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    return { status: res.status, body: (await res.json()) as any };
  };

  beforeEach(async () => {
    calls = [];
    const t = await testEngine(backend, { pollMs: 50 });
    engine = t.engine;
    close = t.close;
    await engine.limits.define({ name: 'tool-api', limit: 1, period: '1s' });
    const api = defineTool('api', {
      risk: 'low',
      timeout: '5s',
      rateLimit: { name: 'tool-api' },
      run: async (input: { n: number }) => (calls.push(Date.now()), { n: input.n }),
    });
    const caller = defineAgent('caller', {
      ledger: {},
      background: async (input: { events: Array<{ payload: { n: number } }> }, ctx) => {
        await ctx.node('call', () => ctx.tool('api', { n: input.events[0]!.payload.n }));
      },
    });
    const service = sessions(engine, engine.store, { agents: [caller], tools: [api] });
    const ledger = new AgentLedger(engine, engine.store, service, { defaultAgent: 'caller' });
    app = mount(new Hono(), agentRoutes(ledger));
  });
  afterEach(() => close());

  it('spaces 3 calls sharing 1 per second a second apart, each run waiting durably and completing, each tool run once', async () => {
    const sent = await Promise.all(
      [1, 2, 3].map(
        async (n) =>
          (
            await call('POST', '/agent/events', {
              user_id: `u-${n}`,
              source: 'test',
              input_type: 'text',
              conversation_id: `c-${n}`,
              agent: 'caller',
              payload: { n },
            })
          ).body as { run_id: string },
      ),
    );
    const runs = await Promise.all(
      sent.map(({ run_id }) =>
        eventually(async () => {
          const r = (await call('GET', `/agent/runs/${run_id}`)).body;
          return r.status === 'success' || r.status === 'failed' ? r : undefined;
        }, 20_000),
      ),
    );
    expect(runs.map((r) => r.status)).toEqual(['success', 'success', 'success']);
    expect(runs.map((r) => r.tool_calls.map((c: { status: string }) => c.status))).toEqual([['ok'], ['ok'], ['ok']]);
    expect(calls).toHaveLength(3);
    // GCRA, burst 1: one at once, then one a second (the tool's clock, a little after the database's take)
    const at = [...calls].sort((a, b) => a - b);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(900);
    expect(at[2]! - at[0]!).toBeGreaterThanOrEqual(1900);
    // the waits were durable: journaled in the runs that found no room
    let waits = 0;
    for (const { run_id } of sent)
      waits += (await engine.journal.readStream(`run:${run_id}`)).filter(
        (e) => e.type === RUN_EVENT.stepRateWaiting,
      ).length;
    expect(waits).toBeGreaterThanOrEqual(2);
  }, 40_000);

  it('refuses a bad rateLimit at definition, naming the field', () => {
    const define = (rateLimit: unknown) => () =>
      defineTool('bad', { risk: 'low', timeout: '1s', rateLimit: rateLimit as never, run: async () => null });
    expect(define({ name: '' })).toThrow(ValidationError);
    expect(define({ name: '' })).toThrow(/rateLimit\.name/);
    expect(define([{ name: 'a' }, { name: 'b', units: 0 }])).toThrow(/rateLimit\[1\]\.units/);
  });
});
