import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { ValidationError } from '../errors.js';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import type { AgentFlowOptions } from './agent-flow.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';

type Texts = { events: Array<{ payload: { text: string } }> };

/** Batches of agent intake events (issue 40): one run per batch, holding every event of it in arrival order. */
describe.each(backends)('agent intake batches on $name', (backend) => {
  let engine: Engine;
  let ledger: AgentLedger;
  let close: () => Promise<void>;
  /** What each run saw: its run id and the texts of its events (once per run, in its one step). */
  let seen: Array<{ run: string; texts: string[] }>;

  const agents = () => {
    const batched = (name: string, batch: AgentFlowOptions['batch']) =>
      defineAgent(name, {
        ledger: {},
        flow: { batch: batch! },
        background: async (input: Texts, ctx) => {
          await ctx.node('take', async () => {
            seen.push({ run: ctx.sessionId, texts: input.events.map((e) => e.payload.text) });
          });
        },
      });
    return [
      batched('digest', { maxSize: 10, timeout: '5s' }),
      batched('trio', { maxSize: 3, timeout: '1h' }),
      batched('solo', { maxSize: 1, timeout: '1h' }),
      batched('quintet', { maxSize: 5, timeout: '1h' }),
      batched('tenants', { key: 'event.payload.tenant', maxSize: 2, timeout: '1h' }),
    ];
  };
  const send = (agent: string, conversation_id: string, text: string, payload: object = {}) =>
    ledger.intake({
      agent,
      conversation_id,
      user_id: 'u-1',
      source: 'test',
      input_type: 'text',
      payload: { text, ...payload },
      idempotency_key: `${agent}:${conversation_id}:${text}`,
    });
  const ended = (id: string) =>
    eventually(async () => {
      const r = await ledger.run(id);
      return r.status === 'success' || r.status === 'failed' ? r : undefined;
    }, 30_000);
  const texts = (run: { events: Array<{ payload: unknown }> }) =>
    run.events.map((e) => (e.payload as { text: string }).text);

  beforeEach(async () => {
    seen = [];
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    close = t.close;
    ledger = new AgentLedger(engine, engine.store, sessions(engine, engine.store, { agents: agents() }), {
      defaultAgent: 'digest',
    });
  });
  afterEach(() => close());

  it('makes a burst one run that sees every event in order, waiting as "batch n of max" until timeout', async () => {
    const words = ['one', 'two', 'three', 'four'];
    const results = [];
    for (const text of words) results.push(await send('digest', 'c-1', text));
    // over HTTP the answer names the run the event joined
    const app = mount(new Hono(), agentRoutes(ledger));
    const res = await app.fetch(
      new Request('http://api/agent/events', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          agent: 'digest',
          conversation_id: 'c-1',
          user_id: 'u-1',
          source: 'test',
          input_type: 'text',
          payload: { text: 'five' },
        }),
      }),
    );
    expect(res.status).toBe(202);
    results.push(await res.json());
    const other = await send('digest', 'c-2', 'elsewhere');
    const runId = results[0]!.run_id;
    expect(results.map((r) => r.run_id)).toEqual(results.map(() => runId));
    expect(results.map((r) => r.decision)).toEqual(['queued', 'coalesced', 'coalesced', 'coalesced', 'coalesced']);
    expect(other.run_id).not.toBe(runId);
    const waiting = await engine.run(runId);
    expect(waiting.status).toBe('waiting');
    expect(waiting.waitingFor).toMatch(/^batch 5 of 10 — until \d{4}-\d\d-\d\dT[\d:.]+Z$/);
    expect((await ledger.run(runId)).waiting_for).toBe(waiting.waitingFor);
    expect((await engine.run(other.run_id)).waitingFor).toMatch(/^batch 1 of 10 — until /);
    // the timeout closes the batch with fewer than maxSize
    const done = await ended(runId);
    expect(done.status).toBe('success');
    expect(texts(done)).toEqual([...words, 'five']);
    expect(seen.filter((s) => s.run === runId).map((s) => s.texts)).toEqual([[...words, 'five']]);
    expect(texts(await ended(other.run_id))).toEqual(['elsewhere']);
    // the next event after the batch closed opens a new one
    const later = await send('digest', 'c-1', 'six');
    expect(later).toMatchObject({ decision: 'queued' });
    expect(later.run_id).not.toBe(runId);
    expect(texts(await ended(later.run_id))).toEqual(['six']);
  });

  it('starts a full batch at once, not at its timeout; the next event opens a new batch', async () => {
    const results = [];
    for (const text of ['a', 'b', 'c', 'd']) results.push(await send('trio', 'c-t', text));
    const [first, , , fourth] = results;
    expect(results.slice(0, 3).map((r) => r.run_id)).toEqual([first!.run_id, first!.run_id, first!.run_id]);
    expect(fourth!.run_id).not.toBe(first!.run_id);
    expect(fourth!.decision).toBe('queued');
    // the timeout is an hour: only the third event can have closed it
    const done = await ended(first!.run_id);
    expect(done.status).toBe('success');
    expect(texts(done)).toEqual(['a', 'b', 'c']);
    const open = await engine.run(fourth!.run_id);
    expect(open.status).toBe('waiting');
    expect(open.waitingFor).toMatch(/^batch 1 of 3 — until /);
    // a batch of one is full at its event: each event is a run of its own, begun at once
    const solo = [await send('solo', 'c-s', 'p'), await send('solo', 'c-s', 'q')];
    expect(solo.map((r) => r.decision)).toEqual(['queued', 'queued']);
    expect(solo[0]!.run_id).not.toBe(solo[1]!.run_id);
    for (const [i, r] of solo.entries()) expect(texts(await ended(r.run_id))).toEqual([['p', 'q'][i]]);
  });

  it('splits batches by key across conversations, and refuses an event without the key, naming it', async () => {
    const a1 = await send('tenants', 'c-1', 'a1', { tenant: 'a' });
    const b1 = await send('tenants', 'c-3', 'b1', { tenant: 'b' });
    const a2 = await send('tenants', 'c-2', 'a2', { tenant: 'a' });
    const b2 = await send('tenants', 'c-1', 'b2', { tenant: 'b' });
    expect([a2.run_id, b2.run_id]).toEqual([a1.run_id, b1.run_id]);
    expect(a1.run_id).not.toBe(b1.run_id);
    expect(texts(await ended(a1.run_id))).toEqual(['a1', 'a2']);
    expect(texts(await ended(b1.run_id))).toEqual(['b1', 'b2']);
    const refused = send('tenants', 'c-4', 'no tenant');
    await expect(refused).rejects.toThrow(ValidationError);
    await expect(refused).rejects.toThrow(
      "flow.batch.key: 'event.payload.tenant' is not in the event: the run has no key to count it under",
    );
    expect((await ledger.events({ conversation_id: 'c-4' })).items).toEqual([]);
  });

  it('puts 20 concurrent events of one key in 4 runs of 5, each event once', async () => {
    const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => send('quintet', 'c-q', `m${i}`)));
    const runs = [...new Set(sent.map((s) => s.run_id))];
    expect(runs).toHaveLength(4);
    const held = [];
    for (const run of runs) held.push(texts(await ended(run)));
    expect(held.map((h) => h.length)).toEqual([5, 5, 5, 5]);
    expect(held.flat().sort()).toEqual(sent.map((_, i) => `m${i}`).sort());
    // each run's events are the ones whose answers named it
    for (const [i, run] of runs.entries())
      expect(held[i]!.sort()).toEqual(sent.flatMap((s, j) => (s.run_id === run ? [`m${j}`] : [])).sort());
    expect(seen.map((s) => s.run).sort()).toEqual([...runs].sort());
  });
});

describe('defineAgent batch options', () => {
  const bad = (flow: unknown) => () => defineAgent('a', { background: async () => {}, flow: flow as never });
  it('refuses bad batches at define time by the checks of workflows, naming the field', () => {
    expect(bad({ batch: { maxSize: 0, timeout: '5s' } })).toThrow(
      'flow.batch.maxSize: must be a whole number from 1 to 10000 (got 0)',
    );
    expect(bad({ batch: { maxSize: 10_001, timeout: '5s' } })).toThrow(
      'flow.batch.maxSize: must be a whole number from 1 to 10000 (got 10001)',
    );
    expect(bad({ batch: { maxSize: 5, timeout: '500ms' } })).toThrow('flow.batch.timeout: must be from 1s to 30d');
    expect(bad({ batch: { maxSize: 5, timeout: '2d' } })).toThrow('flow.batch.timeout: must be from 1s to 1d');
    expect(bad({ batch: { maxSize: 5 } })).toThrow(/^flow\.batch\.timeout: /);
    expect(bad({ batch: { key: 'event.nope', maxSize: 5, timeout: '5s' } })).toThrow(
      /^flow\.batch\.key: 'event\.nope' is not a field of the intake event/,
    );
    expect(bad({ batch: { key: 'input.user_id', maxSize: 5, timeout: '5s' } })).toThrow(
      "flow.batch.key: an agent's key reads the intake event: write 'event.user_id', not 'input.user_id'",
    );
    expect(bad({ batch: { maxSize: 5, timeout: '5s', into: 'events' } })).toThrow(/^flow\.batch\.into: /);
    expect(bad({ batch: { maxSize: 5, timeout: '5s' }, debounce: { period: '2s' } })).toThrow(
      'flow.batch: cannot be combined with debounce',
    );
    expect(bad({ batch: 'often' })).toThrow('flow.batch: must be an object');
    const ok = defineAgent('ok', {
      background: async () => {},
      flow: { batch: { key: 'event.user_id', maxSize: 100, timeout: '1m' }, concurrency: [{ limit: 2 }] },
    });
    expect(ok.flow).toEqual({
      concurrency: [{ limit: 2 }],
      batch: { key: 'event.user_id', maxSize: 100, timeout: '1m' },
    });
  });
});
