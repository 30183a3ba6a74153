import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mount } from '../server/app.js';
import { agentRoutes } from '../server/routes/agents.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { sessions } from './service.js';

describe.each(backends)('GET /agent/events on $name', (backend) => {
  let app: Hono;
  let close: () => Promise<void>;

  const call = async (method: string, path: string, body?: unknown) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(`http://api${path}`, init));
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const list = async (query: string) => {
    const res = await call('GET', `/agent/events${query}`);
    expect(res.status).toBe(200);
    return res.body as { events: Array<{ id: string; status: string }>; next_cursor: string | null };
  };

  beforeEach(async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    // `fail: true` in the payload fails the run at once (no retry): a failed event
    const echo = defineAgent('echo', {
      ledger: { retry: { maxAttempts: 1 } },
      background: async (input: { events: Array<{ payload: { fail?: boolean } }> }, ctx) => {
        await ctx.node('answer', async () => {
          if (input.events[0]!.payload.fail) throw new Error('asked to fail');
          return 'ok';
        });
      },
    });
    const ledger = new AgentLedger(
      t.engine,
      t.engine.store,
      sessions(t.engine, t.engine.store, { agents: [echo], tools: [] }),
      {
        defaultAgent: 'echo',
      },
    );
    app = mount(new Hono(), agentRoutes(ledger));
    close = t.close;
  });
  afterEach(() => close());

  it('lists events newest first, by status, conversation, user and source and together, page by page; a garbage cursor is 400 naming cursor', async () => {
    const sent: Array<{ id: string; conversation: string; user: string; source: string; fail: boolean }> = [];
    for (const [i, conversation, user, source, fail] of [
      [0, 'c-a', 'u-1', 'whatsapp_webhook', false],
      [1, 'c-b', 'u-2', 'email', true],
      [2, 'c-a', 'u-1', 'email', true],
      [3, 'c-c', 'u-1', 'whatsapp_webhook', false],
      [4, 'c-a', 'u-2', 'whatsapp_webhook', true],
    ] as const) {
      const res = await call('POST', '/agent/events', {
        conversation_id: conversation,
        user_id: user,
        source,
        input_type: 'text',
        payload: { i, fail },
      });
      expect(res.status).toBe(202);
      sent.push({ id: res.body.event_id, conversation, user, source, fail });
    }
    await eventually(
      async () => (await list('')).events.every((e) => e.status === 'done' || e.status === 'failed'),
      20_000,
    );
    const newestFirst = sent.map((e) => e.id).reverse();
    const ids = async (query: string) => (await list(query)).events.map((e) => e.id);
    const expected = (keep: (e: (typeof sent)[number]) => boolean) =>
      newestFirst.filter((id) => keep(sent.find((e) => e.id === id)!));

    expect(await ids('')).toEqual(newestFirst);
    expect(await ids('?status=failed')).toEqual(expected((e) => e.fail));
    expect(await ids('?status=done')).toEqual(expected((e) => !e.fail));
    expect(await ids('?conversation_id=c-a')).toEqual(expected((e) => e.conversation === 'c-a'));
    expect(await ids('?user_id=u-2')).toEqual(expected((e) => e.user === 'u-2'));
    expect(await ids('?source=email')).toEqual(expected((e) => e.source === 'email'));
    expect(await ids('?status=failed&conversation_id=c-a&source=whatsapp_webhook&user_id=u-2')).toEqual([sent[4]!.id]);
    expect((await list('?status=failed')).events[0]).toMatchObject({
      id: sent[4]!.id,
      status: 'failed',
      attempt_count: 1,
      last_error: expect.stringContaining('asked to fail'),
      conversation_id: 'c-a',
      source: 'whatsapp_webhook',
    });

    // page by page, two at a time: the same order, each event once
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof list>> = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.events.length).toBeLessThanOrEqual(2);
      paged.push(...page.events.map((e) => e.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(paged).toEqual(newestFirst);
    expect(await ids(`?status=failed&limit=1&cursor=${sent[4]!.id}`)).toEqual([sent[2]!.id]);

    for (const bad of ['garbage', 'evt_00000000000000000000000000', 'ses_01J00000000000000000000000']) {
      const res = await call('GET', `/agent/events?cursor=${bad}`);
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body)).toContain('cursor');
    }
    for (const query of ['?limit=0', '?limit=501', '?status=lost', '?colour=red'])
      expect((await call('GET', `/agent/events${query}`)).status).toBe(400);
    expect((await list('?limit=500')).events).toHaveLength(5);
  });
});
