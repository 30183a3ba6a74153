import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Hono } from 'hono';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../engine.js';
import { mount } from '../server/app.js';
import { agentProtocolRoutes } from '../server/routes/agent-protocol.js';
import { agentRoutes } from '../server/routes/agents.js';
import { sessionRoutes } from '../server/routes/sessions.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { defineAgent } from './agent.js';
import { AgentLedger } from './ledger.js';
import { issueLeaseToken } from './lease-token.js';
import { RemoteLedger } from './remote.js';
import { remoteStream } from './remote-events.js';
import { sessions } from './service.js';

interface Invocation {
  session_id: string;
  report_url: string;
  session_url: string;
  lease_token: string;
}

describe.each(backends)('an HTTP agent writing its ledger on $name', (backend) => {
  let engine: Engine;
  let app: Hono;
  let agentServer: Server;
  let invocations: Invocation[];
  let close: () => Promise<void>;

  const call = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await app.fetch(new Request(url.startsWith('http') ? url : `http://api${url}`, init));
    const text = await res.text();
    return {
      status: res.status,
      body: text ? JSON.parse(text) : null,
      protocol: res.headers.get('runledger-protocol'),
    };
  };
  const invoked = async (): Promise<Invocation> => {
    const { session_id } = (await call('POST', '/sessions', { agent: 'remote', input: { order: 7 } })).body;
    return eventually(async () => invocations.find((i) => i.session_id === session_id));
  };
  /** The session's run waits for the report and no pass of it runs (see sessions.int.test.ts: a report sent sooner may be seen only at the maximum wait on PostgreSQL). */
  const suspended = (id: string) =>
    eventually(async () => {
      if ((await engine.run(id)).status !== 'waiting') return false;
      const running = await engine.store.taskList({ queue: 'runledger.runs', state: 'running', limit: 1000 });
      return !running.some((task) => task.orderingKey === id);
    });

  beforeEach(async () => {
    invocations = [];
    agentServer = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        invocations.push(JSON.parse(text));
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":true}');
      });
    });
    await new Promise<void>((resolve) => agentServer.listen(0, '127.0.0.1', resolve));
    const agentUrl = `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}/invoke`;
    const t = await testEngine(backend, { pollMs: 100 });
    engine = t.engine;
    const service = sessions(engine, engine.store, {
      agents: [defineAgent('remote', { url: agentUrl, maxWait: '1h' })],
      allow: ['127.0.0.1'],
      reportBaseUrl: 'http://api/',
    });
    const ledger = new AgentLedger(engine, engine.store, service, { defaultAgent: 'remote' });
    app = mount(new Hono(), [
      ...sessionRoutes(service),
      ...agentRoutes(ledger),
      ...agentProtocolRoutes(new RemoteLedger(engine, engine.store, service)),
    ]);
    close = async () => {
      agentServer.closeAllConnections();
      agentServer.close();
      await t.close();
    };
  });
  afterEach(() => close());

  it('writes two nodes, a low-risk call, a high-risk call approved while it long-polls, a checkpoint, then reports success', async () => {
    const inv = await invoked();
    expect(inv.session_url).toBe(`http://api/sessions/${inv.session_id}`);
    const lease_token = inv.lease_token;
    const at = (path: string) => `${inv.session_url}${path}`;

    const lifecycle = await call(
      'POST',
      at('/lifecycle'),
      { lease_token, status: 'AGENT_ENTRYPOINT_STARTED' },
      { 'runledger-protocol': '1' },
    );
    expect(lifecycle.status, JSON.stringify(lifecycle.body)).toBe(200);
    expect(lifecycle.protocol).toBe('1');

    const classify = await call('POST', at('/nodes'), { lease_token, name: 'classify', input: { text: 'refund #7' } });
    expect(classify.status, JSON.stringify(classify.body)).toBe(201);
    expect(classify.body).toEqual({ seq: 1, name: 'classify', attempt: 1, status: 'started' });
    const lookup = await call('POST', at('/tool-calls'), {
      lease_token,
      tool: 'lookup_order',
      risk: 'low',
      input: { order: 7 },
    });
    expect(lookup.body).toMatchObject({
      status: 'started',
      approval_status: null,
      node: 'classify',
      external_idempotency_key: `${inv.session_id}:classify:lookup_order#1`,
    });
    expect(
      (await call('POST', at(`/tool-calls/${lookup.body.id}/result`), { lease_token, output: { total: 40 } })).body,
    ).toMatchObject({ status: 'ok', output: { total: 40 } });
    expect((await call('POST', at('/progress'), { lease_token, percent: 50, label: 'classified' })).status).toBe(200);
    expect(
      (await call('POST', at(`/nodes/${classify.body.seq}/end`), { lease_token, output: { intent: 'refund' } })).body,
    ).toMatchObject({ status: 'ok' });

    const act = await call('POST', at('/nodes'), { lease_token, name: 'act' });
    expect(act.body.seq).toBe(3);
    // the refund's request takes seq 5, after the checkpoint's 4
    expect((await call('POST', at('/checkpoints'), { lease_token, state: { refund: 'asked' } })).status).toBe(201);
    const refund = await call('POST', at('/tool-calls'), {
      lease_token,
      tool: 'issue_refund',
      risk: 'high',
      input: { order: 7, amount: 40 },
    });
    expect(refund.body).toMatchObject({ status: 'blocked', approval_status: 'pending' });
    expect((await call('POST', at(`/tool-calls/${refund.body.id}/result`), { lease_token, output: {} })).status).toBe(
      409,
    );
    // the agent long-polls; a person approves through the approvals API meanwhile
    const started = Date.now();
    const polled = call('GET', at(`/tool-calls/${refund.body.id}?wait=20s`));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await call('GET', '/agent/approvals')).body.tool_calls.map((c: { id: string }) => c.id)).toEqual([
      refund.body.id,
    ]);
    expect((await call('POST', `/agent/tool-calls/${refund.body.id}/approve`, { by: 'ana' })).status).toBe(200);
    const decided = await polled;
    expect(decided.body).toMatchObject({ approval_status: 'approved', approval_by: 'ana' });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(
      (await call('POST', at(`/tool-calls/${refund.body.id}/result`), { lease_token, output: { refund_id: 'rf_1' } }))
        .body,
    ).toMatchObject({ status: 'ok', output: { refund_id: 'rf_1' } });
    expect((await call('POST', at(`/nodes/${act.body.seq}/end`), { lease_token, output: { done: true } })).status).toBe(
      200,
    );

    await suspended(inv.session_id);
    expect(
      (await call('POST', at('/lifecycle'), { lease_token, status: 'AGENT_BACKGROUND_TASK_COMPLETED' })).body,
    ).toEqual({ session_id: inv.session_id, status: 'success', duplicate: false });
    await eventually(async () => (await call('GET', `/sessions/${inv.session_id}`)).body.status === 'success');

    const run = (await call('GET', `/agent/runs/${inv.session_id}`)).body;
    expect(run.status).toBe('success');
    expect(run.steps.map((s: { node: string; status: string; seq: number }) => [s.node, s.seq, s.status])).toEqual([
      ['classify', 1, 'ok'],
      ['act', 3, 'ok'],
    ]);
    expect(run.steps[0].input_snapshot).toEqual({ text: 'refund #7' });
    expect(
      run.tool_calls.map(
        (c: { tool_name: string; risk_level: string; status: string; approval_status: string | null }) => [
          c.tool_name,
          c.risk_level,
          c.status,
          c.approval_status,
        ],
      ),
    ).toEqual([
      ['lookup_order', 'low', 'ok', null],
      ['issue_refund', 'high', 'ok', 'approved'],
    ]);
    const checkpoints = run.checkpoints.map((c: { node: string; state: unknown }) => [c.node, c.state]);
    expect(checkpoints).toHaveLength(3);
    expect(checkpoints).toEqual(
      expect.arrayContaining([
        ['classify', { intent: 'refund' }],
        ['act', { refund: 'asked' }],
        ['act', { done: true }],
      ]),
    );
    expect((await call('GET', at('/progress'))).body).toMatchObject({ percent: 50, label: 'classified' });
    // after the end nothing more is written
    expect((await call('POST', at('/nodes'), { lease_token, name: 'late' })).status).toBe(409);
  });

  it('answers 409 lease_lost to a superseded invocation and writes nothing', async () => {
    const inv = await invoked();
    // what the invoke step journals before it calls the agent again (a re-invocation)
    const newer = await issueLeaseToken(engine.journal, inv.session_id, 2);
    const before = await engine.journal.readStream(remoteStream(inv.session_id));
    const stale = await call('POST', `${inv.session_url}/nodes`, { lease_token: inv.lease_token, name: 'classify' });
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe('lease_lost');
    expect(stale.protocol).toBe(null);
    expect(
      (await call('POST', `${inv.session_url}/tool-calls`, { lease_token: inv.lease_token, tool: 'x', risk: 'low' }))
        .status,
    ).toBe(409);
    expect(await engine.journal.readStream(remoteStream(inv.session_id))).toHaveLength(before.length);
    expect((await call('GET', `/agent/runs/${inv.session_id}`)).body).toMatchObject({ steps: [], tool_calls: [] });
    expect((await call('POST', `${inv.session_url}/nodes`, { lease_token: newer, name: 'classify' })).status).toBe(201);
  });

  it('answers 400 naming the field to bad input, and to another protocol major', async () => {
    const inv = await invoked();
    const lease_token = inv.lease_token;
    const problem = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await call('POST', `${inv.session_url}${path}`, body, headers);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      return JSON.stringify(res.body.error);
    };
    expect(await problem('/nodes', { name: 'classify' })).toContain('lease_token');
    expect(await problem('/nodes', { lease_token, name: 'no spaces' })).toContain('name');
    expect(await problem('/tool-calls', { lease_token, tool: 'refund', risk: 'extreme' })).toContain('risk');
    expect(await problem('/lifecycle', { lease_token, status: 'DONE' })).toContain('status');
    expect(await problem('/checkpoints', { lease_token, state: {} })).toContain('node');
    expect(await problem('/nodes/abc/end', { lease_token })).toContain('seq');
    expect(await problem('/nodes', { lease_token, name: 'classify' }, { 'runledger-protocol': '2' })).toContain(
      'runledger-protocol',
    );
    expect((await call('GET', `${inv.session_url}/tool-calls/tc_x?wait=2m`)).status).toBe(400);
    expect((await call('GET', `/agent/runs/${inv.session_id}`)).body.steps).toEqual([]);
  });
});
