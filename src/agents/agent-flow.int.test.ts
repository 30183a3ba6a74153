import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { decideBudget } from '../runtime/pass/budget-decision.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';
import { defineTool } from './tools.js';

/** Flow control of agent runs (issue 40): a per-conversation debounce, per-user concurrency, a token budget. */
describe.each(backends)('agent flow control on $name', (backend) => {
  let engine: Engine;
  let ledger: AgentLedger;
  let close: () => Promise<void>;
  /** What each run of `chat` saw: its run id and the texts of its events. */
  let seen: Array<{ run: string; texts: string[] }>;
  let inFlight: Map<string, number>;
  let peak: Map<string, number>;

  const send = (agent: string, conversation_id: string, text: string, user_id = 'u-1') =>
    ledger.intake({ agent, conversation_id, user_id, source: 'test', input_type: 'text', payload: { text } });
  const ended = (id: string) =>
    eventually(async () => {
      const r = await ledger.run(id);
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    }, 30_000);

  beforeEach(async () => {
    seen = [];
    inFlight = new Map();
    peak = new Map();
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    close = t.close;
    const chat = defineAgent('chat', {
      ledger: {},
      flow: { debounce: { period: '1500ms', maxWait: '20s' } },
      background: async (input: { events: Array<{ payload: { text: string } }> }, ctx) => {
        await ctx.node('answer', async () => {
          seen.push({ run: ctx.sessionId, texts: input.events.map((e) => e.payload.text) });
          return input.events.length;
        });
      },
    });
    const perUser = defineAgent('per-user', {
      ledger: {},
      flow: { concurrency: [{ key: 'event.user_id', limit: 2 }] },
      background: async (input: { user_id?: string; events: Array<{ payload: { text: string } }> }, ctx) => {
        await ctx.node('work', async () => {
          const user = input.events[0]!.payload.text.split(':')[0]!;
          const now = (inFlight.get(user) ?? 0) + 1;
          inFlight.set(user, now);
          peak.set(user, Math.max(peak.get(user) ?? 0, now));
          await new Promise((resolve) => setTimeout(resolve, 400));
          inFlight.set(user, inFlight.get(user)! - 1);
          return 'done';
        });
      },
    });
    const parallel = defineAgent('parallel', {
      ledger: {},
      flow: { concurrency: [{ key: 'event.conversation_id', limit: 2 }] },
      background: async (_input, ctx) => {
        await ctx.node('work', async () => {
          const now = (inFlight.get('conversation') ?? 0) + 1;
          inFlight.set('conversation', now);
          peak.set('conversation', Math.max(peak.get('conversation') ?? 0, now));
          await new Promise((resolve) => setTimeout(resolve, 400));
          inFlight.set('conversation', inFlight.get('conversation')! - 1);
        });
      },
    });
    const model = defineTool('model', {
      risk: 'low',
      timeout: '5s',
      run: async (input: { prompt: string }) => ({ text: `echo ${input.prompt}`, total_tokens: 600 }),
      usage: (answer: { total_tokens: number }) => ({ tokens: answer.total_tokens }),
    });
    const thrifty = (name: string, onExceed: 'fail' | 'approve') =>
      defineAgent(name, {
        ledger: {},
        flow: { budget: { tokens: 1_000, onExceed } },
        background: async (_input, ctx) => {
          await ctx.node('ask', async () => {
            await ctx.tool('model', { prompt: 'one' });
            await ctx.tool('model', { prompt: 'two' });
          });
          await ctx.node('after', async () => 'went on');
        },
      });
    const tenanted = defineAgent('tenanted', {
      ledger: {},
      flow: { concurrency: [{ key: 'event.payload.tenant', limit: 1 }] },
      background: async () => {},
    });
    const service = sessions(engine, engine.store, {
      agents: [chat, perUser, tenanted, parallel, thrifty('thrifty', 'fail'), thrifty('asking', 'approve')],
      tools: [model],
    });
    ledger = new AgentLedger(engine, engine.store, service, { defaultAgent: 'chat' });
  });
  afterEach(() => close());

  it('debounces a conversation: 5 arrivals within the period are one run that sees all 5; another conversation, another run', async () => {
    const texts = ['one', 'two', 'three', 'four', 'five'];
    const results = [];
    for (const text of texts) {
      results.push(await send('chat', 'c-1', text));
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const other = await send('chat', 'c-2', 'elsewhere');
    const runId = results[0]!.run_id;
    expect(results.map((r) => r.run_id)).toEqual(texts.map(() => runId));
    expect(results.map((r) => r.decision)).toEqual(['queued', 'coalesced', 'coalesced', 'coalesced', 'coalesced']);
    expect(other.run_id).not.toBe(runId);
    // held back until the conversation is quiet, with the reason a person reads
    const waiting = await engine.run(runId);
    expect(waiting.status).toBe('waiting');
    expect(waiting.waitingFor).toMatch(/^debounced until \d{4}-/);
    expect((await ledger.run(runId)).waiting_for).toBe(waiting.waitingFor);
    const done = await ended(runId);
    expect(done.status).toBe('success');
    expect(done.events.map((e) => e.payload)).toEqual(texts.map((text) => ({ text })));
    expect((await ended(other.run_id)).status).toBe('success');
    expect(seen.filter((s) => s.run === runId).map((s) => s.texts)).toEqual([texts]);
    expect(seen.filter((s) => s.run === other.run_id).map((s) => s.texts)).toEqual([['elsewhere']]);
    // a later arrival after the window closed and the run started opens a new window: a new run
    const later = await send('chat', 'c-1', 'six');
    expect(later).toMatchObject({ decision: 'queued' });
    expect(later.run_id).not.toBe(runId);
    expect((await ended(later.run_id)).events).toHaveLength(1);
  });

  it('keeps a per-user limit across conversations with concurrent arrivals, showing why a run waits', async () => {
    const sent = await Promise.all([1, 2, 3, 4, 5, 6].map((i) => send('per-user', `conv-${i}`, `ada:${i}`, 'ada')));
    const bob = await send('per-user', 'conv-bob', 'bob:1', 'bob');
    const reason = await eventually(async () => {
      for (const s of sent) {
        const view = await engine.run(s.run_id);
        // the agent run shows the reason its run shows
        if (
          view.status === 'waiting' &&
          view.waitingFor &&
          (await ledger.run(s.run_id)).waiting_for === view.waitingFor
        )
          return view.waitingFor;
      }
      return undefined;
    }, 20_000);
    expect(reason).toBe('concurrency agent:per-user:user_id=ada — 2 of 2 in use');
    for (const s of [...sent, bob]) expect((await ended(s.run_id)).status).toBe('success');
    expect(peak.get('ada')).toBe(2);
    expect(peak.get('bob')).toBe(1);
  });

  it('lets a conversation run two at a time under a conversation limit of 2 (replacing the ordering key)', async () => {
    const sent = [];
    for (const i of [1, 2, 3, 4]) sent.push(await send('parallel', 'c-par', `m${i}`));
    expect(new Set(sent.map((s) => s.run_id)).size).toBe(4);
    for (const s of sent) expect((await ended(s.run_id)).status).toBe('success');
    expect(peak.get('conversation')).toBe(2);
  });

  it('fails a run over its token budget, naming the figures, from what its tools report', async () => {
    const sent = await send('thrifty', 'c-budget', 'hello');
    const done = await ended(sent.run_id);
    expect(done.status).toBe('failed');
    expect(done.tool_calls.map((c) => c.tool_name)).toEqual(['model', 'model']);
    const view = await engine.run(sent.run_id);
    expect(view.status).toBe('failed');
    expect(view.error).toBe('BudgetExceededError: budget: 1,200 of 1,000 tokens');
    expect(view.usage).toMatchObject({ tokens: 1_200, toolCalls: 2 });
  });

  it('pauses a run over its token budget for approval (onExceed: approve), then goes on', async () => {
    const sent = await send('asking', 'c-ask', 'hello');
    const waiting = await eventually(async () => {
      const view = await engine.run(sent.run_id);
      return view.status === 'waiting' && view.waitingFor ? view : undefined;
    }, 20_000);
    expect(waiting.waitingFor).toBe('budget: 1,200 of 1,000 tokens — approve to continue');
    await decideBudget(engine.runtime, sent.run_id, { decision: 'approve', by: 'ana', extend: { tokens: 500 } });
    const done = await ended(sent.run_id);
    expect(done.status).toBe('success');
    expect(done.checkpoints.map((c) => c.node)).toEqual(['ask', 'after']);
  });

  it('refuses an event that lacks a key field, naming the key, and writes nothing', async () => {
    const refused = ledger.intake({
      agent: 'tenanted',
      conversation_id: 'c-t',
      user_id: 'u-1',
      source: 'test',
      input_type: 'text',
      payload: { text: 'no tenant' },
    });
    await expect(refused).rejects.toThrow(ValidationError);
    await expect(refused).rejects.toThrow(
      "flow.concurrency[0].key: 'event.payload.tenant' is not in the event: the run has no key to count it under",
    );
    // over HTTP: 400 naming the field
    const app = mount(new Hono(), agentRoutes(ledger));
    const res = await app.fetch(
      new Request('http://api/agent/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          agent: 'tenanted',
          conversation_id: 'c-t',
          user_id: 'u-1',
          source: 'test',
          input_type: 'text',
          payload: {},
        }),
      }),
    );
    expect(res.status).toBe(400);
    expect((await res.json()).error.problems[0].path).toBe('flow.concurrency[0].key');
    expect((await ledger.events({ conversation_id: 'c-t' })).items).toEqual([]);
  });
});

describe('defineAgent flow options', () => {
  const bad = (flow: unknown) => () => defineAgent('a', { background: async () => {}, flow: flow as never });
  it('refuses bad options at define time, naming the field and the limit', () => {
    expect(bad({ concurrency: [{ key: 'event.user_id', limit: 0 }] })).toThrow(
      'flow.concurrency[0].limit: must be a whole number from 1 to 1000000 (got 0)',
    );
    expect(bad({ concurrency: [{ key: 'event.nope', limit: 1 }] })).toThrow(
      /^flow\.concurrency\[0\]\.key: 'event\.nope' is not a field of the intake event/,
    );
    expect(bad({ concurrency: [{ key: 'input.user_id', limit: 1 }] })).toThrow(
      "flow.concurrency[0].key: an agent's key reads the intake event: write 'event.user_id', not 'input.user_id'",
    );
    expect(bad({ concurrency: [{ limit: 1, fairBy: 'tenant' }] })).toThrow(
      "flow.concurrency[0].fairBy: must be an expression over the event, like 'event.user_id'",
    );
    expect(bad({ debounce: { period: '500ms' } })).toThrow('flow.debounce.period: must be from 1s to 30d');
    expect(bad({ debounce: { period: '5s', maxWait: '2s' } })).toThrow('flow.debounce.maxWait: must be at least');
    expect(bad({ debounce: { key: 'event.user_id', period: '2s' } })).toThrow(/^flow\.debounce\.key: must be/);
    expect(bad({ budget: { tokens: -1 } })).toThrow('flow.budget.tokens: must be a positive number (got -1)');
    expect(bad({ priority: 101 })).toThrow('flow.priority: must be a whole number from -100 to 100');
    expect(bad({ throttle: {} })).toThrow(
      'flow.throttle: is not one of concurrency, priority, debounce, batch, budget',
    );
    const ok = defineAgent('ok', {
      background: async () => {},
      flow: { concurrency: [{ key: 'event.payload.tenant', limit: 3, scope: 'global' }], priority: 5 },
    });
    expect(ok.flow).toEqual({ concurrency: [{ key: 'event.payload.tenant', limit: 3, scope: 'global' }], priority: 5 });
  });
});
