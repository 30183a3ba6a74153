import { describe, expect, it } from 'vitest';
import { sinceOf } from '../cli/audit.js';
import { main } from '../cli/main.js';
import { output } from '../cli/output.js';
import { workflow } from '../runtime/workflow.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { useServer } from './test-server.js';

const TOKEN = 'audit-test-token-0123456789';
const SECRET_VALUE = 'hunter2-do-not-store';

const metered = workflow('audit-budget', { budget: { tokens: 100, onExceed: 'approve' } }, async (ctx) => {
  await ctx.step('ask', async () => 'answer');
  await ctx.usage({ tokens: 150 });
  return ctx.step('after', async () => 'went on');
});
const parked = workflow('audit-wait', async (ctx) => ctx.waitForEvent('never', { timeout: '1h' }));

describe.each(backends)('identity and the audit trail with a token on $name', (backend) => {
  const served = useServer(backend, { token: TOKEN, workers: true, pollMs: 100, codeWorkflows: [metered, parked] });
  const api = async (method: string, path: string, body?: unknown, token: string | null = TOKEN) => {
    const response = await fetch(`${served.server.url}${path}`, {
      method,
      headers: {
        'content-type': 'application/json',
        ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : null };
  };
  const events = async (id: string) => JSON.stringify((await api('GET', `/runs/${id}/events`)).body.events);
  const status = (id: string, wanted: string) =>
    eventually(async () => (await api('GET', `/runs/${id}`)).body.status === wanted);

  it('journals the key, not the body, for a budget approval, a cancel and a pause; the audit lists them', async () => {
    const { body: budget } = await api('POST', '/runs', { workflow: 'audit-budget' });
    await status(budget.run_id, 'waiting');
    const approved = await api('POST', `/runs/${budget.run_id}/budget/approve`, { by: 'mallory' });
    expect(approved.status).toBe(202);
    await status(budget.run_id, 'success');
    const decided = await events(budget.run_id);
    expect(decided).toContain('"by":"bootstrap"');
    expect(decided).not.toContain('mallory');

    const { body: waiting } = await api('POST', '/runs', { workflow: 'audit-wait' });
    expect((await api('POST', `/runs/${waiting.run_id}/cancel`, { reason: 'not needed' })).status).toBe(202);
    await status(waiting.run_id, 'cancelled');
    expect(await events(waiting.run_id)).toContain('"actor":"bootstrap"');

    const pause = { kind: 'queue', name: 'audit-q', by: 'mallory', reason: 'maintenance' };
    expect((await api('POST', '/operator/pause', pause)).status).toBe(200);
    const { body: pauses } = await api('GET', '/operator/pauses');
    expect(pauses.pauses).toContainEqual(expect.objectContaining({ name: 'audit-q', paused_by: 'bootstrap' }));

    const { body: trail } = await api('GET', '/audit?actor=bootstrap&limit=500');
    const seen = trail.entries.map((e: any) => `${e.method} ${e.route} ${e.target} ${e.outcome}`);
    expect(seen).toContain(`POST /runs/{id}/budget/approve ${budget.run_id} 202`);
    expect(seen).toContain(`POST /runs/{id}/cancel ${waiting.run_id} 202`);
    expect(seen).toContain('POST /operator/pause null 200');
    expect(trail.entries.every((e: any) => e.actor === 'bootstrap' && e.method !== 'GET')).toBe(true);
  });

  it("records the approver's key name on the sample agent's refund approval, not the body's by", async () => {
    const sent = await api('POST', '/agent/events', {
      user_id: 'u-1',
      source: 'whatsapp_webhook',
      input_type: 'text',
      conversation_id: 'c-audit',
      payload: { text: 'I want a refund for order 1234' },
    });
    expect(sent.status).toBe(202);
    const pending = await eventually(async () => {
      const calls = (await api('GET', '/agent/approvals?status=pending')).body.tool_calls;
      return calls.find((c: any) => c.run_id === sent.body.run_id);
    }, 20_000);
    const approved = await api('POST', `/agent/tool-calls/${pending.id}/approve`, { by: 'mallory', reason: 'ok' });
    expect(approved.status).toBe(200);
    expect(approved.body.tool_call).toMatchObject({ approval_status: 'approved', approval_by: 'bootstrap' });
    const { body: trail } = await api('GET', `/audit?route=${encodeURIComponent('/agent/tool-calls/{id}/approve')}`);
    expect(trail.entries).toEqual([expect.objectContaining({ actor: 'bootstrap', target: pending.id, outcome: 200 })]);
  });

  it("journals the key with an execution's cancel and a batch's, each execution's cancel request naming it", async () => {
    const definition = {
      name: 'audit-waits',
      steps: [{ id: 'approve', type: 'wait_for_callback', timeout_seconds: 600, config: {} }],
    };
    const { body: saved } = await api('POST', '/workflows', definition);
    const { body: one } = await api('POST', `/workflows/${saved.id}/execute`, { trigger_data: {} });
    const cancelOne = `/workflows/${saved.id}/executions/${one.execution_id}/cancel`;
    expect((await api('POST', cancelOne, { reason: 'not needed' })).status).toBe(202);
    await status(one.execution_id, 'cancelled');
    expect(await events(one.execution_id)).toContain('"actor":"bootstrap"');
    const { body: batch } = await api('POST', `/workflows/${saved.id}/batches`, { inputs: [{}, {}] });
    expect((await api('POST', `/batches/${batch.batch_id}/cancel`, {})).status).toBe(202);
    for (const id of batch.execution_ids) {
      await status(id, 'cancelled');
      expect(await events(id)).toContain('"actor":"bootstrap"');
    }
  });

  it('records a secret change as the key, and never a secret value, not even of a refused request', async () => {
    expect((await api('POST', '/secrets', { name: 'AUDIT_KEY', value: SECRET_VALUE })).status).toBe(201);
    const refused = await api('POST', '/secrets', { name: 'AUDIT_KEY', value: 1, password: SECRET_VALUE });
    expect(refused.status).toBe(400);
    expect((await api('DELETE', '/secrets/AUDIT_KEY')).status).toBe(204);
    const { body: trail } = await api('GET', `/audit?route=${encodeURIComponent('/secrets')}`);
    expect(trail.entries.map((e: any) => [e.actor, e.outcome])).toEqual([
      ['bootstrap', 400],
      ['bootstrap', 201],
    ]);
    expect(trail.entries[0].detail).toMatch(/^validation: value: must be a string/);
    const { body: deleted } = await api('GET', `/audit?route=${encodeURIComponent('/secrets/{name}')}`);
    expect(deleted.entries).toEqual([expect.objectContaining({ target: 'AUDIT_KEY', outcome: 204 })]);
    expect(JSON.stringify((await api('GET', '/audit?limit=500')).body)).not.toContain(SECRET_VALUE);
  });

  it('records a refused request (wrong token: 401) with its address, and not a GET', async () => {
    expect((await api('POST', '/operator/pause', { by: 'x' }, 'wrong-token')).status).toBe(401);
    expect((await api('GET', '/audit', undefined, null)).status).toBe(401);
    const { body: trail } = await api('GET', '/audit?outcome=401');
    expect(trail.entries).toHaveLength(1);
    expect(trail.entries[0]).toMatchObject({
      actor: null,
      method: 'POST',
      route: '/operator/pause',
      outcome: 401,
      detail: expect.stringMatching(/^unauthorized: /),
    });
    expect(trail.entries[0].address).toMatch(/127\.0\.0\.1|::1/);
  });

  it('runledger audit lists the trail with the same filters, as JSON and as a table', async () => {
    const cli = async (...args: string[]) => {
      let printed = '';
      const argv = ['node', 'runledger', 'audit', ...args, '--url', served.server.url, '--token', TOKEN];
      await main(
        argv,
        output((text) => (printed += text), false),
      );
      return printed;
    };
    const page = JSON.parse(await cli('--outcome', '401', '--since', '1h', '--json'));
    expect(page.entries.map((e: any) => [e.route, e.outcome])).toEqual([['/operator/pause', 401]]);
    const paged = JSON.parse(await cli('--actor', 'bootstrap', '--limit', '1', '--json'));
    expect(paged.entries).toHaveLength(1);
    expect(paged.next_cursor).toMatch(/^\d+$/);
    const next = JSON.parse(await cli('--actor', 'bootstrap', '--limit', '1', '--cursor', paged.next_cursor, '--json'));
    expect(next.entries[0].seq).toBeLessThan(paged.entries[0].seq);
    const table = await cli('--route', '/secrets/{name}');
    expect(table).toMatch(/DELETE \/secrets\/\{name\}\s+AUDIT_KEY/);
    expect(table).toContain('bootstrap');
    expect(sinceOf('2h', Date.parse('2026-01-01T12:00:00Z'))).toBe('2026-01-01T10:00:00.000Z');
    expect(() => sinceOf('yesterday')).toThrow(/--since/);
  });

  it('filters by time and pages newest first with a cursor, each row once', async () => {
    const { body: all } = await api('GET', '/audit?limit=500');
    expect(all.entries.length).toBeGreaterThan(4);
    const seqs = all.entries.map((e: any) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a: number, b: number) => b - a));
    const paged: number[] = [];
    let cursor: string | null = null;
    do {
      const { body } = await api('GET', `/audit?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(body.entries.length).toBeLessThanOrEqual(2);
      paged.push(...body.entries.map((e: any) => e.seq));
      cursor = body.next_cursor;
    } while (cursor);
    expect(paged).toEqual(seqs);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await api('GET', `/audit?since=${encodeURIComponent(future)}`)).body.entries).toEqual([]);
    const last = all.entries.at(-1);
    const since = (await api('GET', `/audit?since=${encodeURIComponent(last.at)}&limit=500`)).body.entries;
    expect(since.length).toBe(all.entries.length);
    const bad = await api('GET', '/audit?outcome=42&cursor=abc');
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toMatch(/outcome/);
  });

  it('keeps the data plane out of the trail but for its refusals: events and tasks in, a refused event recorded', async () => {
    const before = (await api('GET', '/audit?limit=500')).body.entries.length;
    expect((await api('POST', '/events', { source: 'shop', 'detail-type': 'order', detail: {} })).status).toBe(202);
    expect((await api('POST', '/queues/audit-q/tasks', { payload: {} })).status).toBe(201);
    expect((await api('POST', '/events', { source: 'shop', 'detail-type': 'order', detail: {} }, 'bad')).status).toBe(
      401,
    );
    const { body } = await api('GET', '/audit?limit=500');
    expect(body.entries.length).toBe(before + 1);
    expect(body.entries[0]).toMatchObject({ route: '/events', outcome: 401 });
  });
});

describe.each(backends)('identity in open mode (no auth configured) on $name', (backend) => {
  const served = useServer(backend);
  const { call } = served;

  it("keeps the body's by, records no actor, and still needs a by where one was required", async () => {
    const pause = { kind: 'queue', name: 'open-q', by: 'ana', reason: 'maintenance' };
    expect((await call('POST', '/operator/pause', pause)).status).toBe(200);
    const { body: pauses } = await call('GET', '/operator/pauses');
    expect(pauses.pauses).toContainEqual(expect.objectContaining({ name: 'open-q', paused_by: 'ana' }));
    const missing = await call('POST', '/operator/resume', { kind: 'queue', name: 'open-q', reason: 'done' });
    expect(missing.status).toBe(400);
    expect(JSON.stringify(missing.body)).toMatch(/by/);
    const foreign = await fetch(`${served.server.url}/operator/pause`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
      body: JSON.stringify(pause),
    });
    expect(foreign.status).toBe(403);
    expect((await call('POST', '/no/such/route')).status).toBe(404);
    const { body: trail } = await call('GET', '/audit');
    expect(trail.entries.map((e: any) => [e.actor, e.route, e.outcome])).toEqual([
      [null, '/no/such/route', 404],
      [null, '/operator/pause', 403],
      [null, '/operator/resume', 400],
      [null, '/operator/pause', 200],
    ]);
  });
});
