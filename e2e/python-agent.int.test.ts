import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REMOTE_EVENT, remoteStream } from '../src/agents/remote-events.js';
import { createEngine } from '../src/engine.js';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { serve, type Served } from './child.js';

interface Agent {
  proc: ChildProcess;
  url: string;
  output(): string;
}

/** examples/python/agent_000.py serving on a free port; resolves once it listens. */
async function pythonAgent(): Promise<Agent> {
  const proc = spawn('python3', [resolve('examples/python/agent_000.py'), '0'], {
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (chunk) => (output += chunk));
  proc.stderr.on('data', (chunk) => (output += chunk));
  const port = await eventually(() => /listening on 127\.0\.0\.1:(\d+)/.exec(output)?.[1], 20_000).catch(() => {
    proc.kill('SIGKILL');
    throw new Error(`agent_000.py did not start:\n${output}`);
  });
  return { proc, url: `http://127.0.0.1:${port}/`, output: () => output };
}

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the server's JSON, asserted field by field
  body: any;
}

async function call(method: string, url: string, body?: unknown): Promise<Answer> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json' } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The one pending approval of session `id` (the agent's high-risk refund), once the agent asked for it. */
function pendingApproval(server: Served, id: string): Promise<{ id: string; tool_name: string; risk_level: string }> {
  return eventually(
    async () =>
      (await call('GET', `${server.url}/agent/approvals`)).body.tool_calls.find(
        (c: { run_id: string }) => c.run_id === id,
      ),
    30_000,
  );
}

// The brief-000 agent in Python (examples/python/agent_000.py, clients/python/runledger/agent.py)
// against a real `runledger serve`: it is invoked over HTTP and writes its nodes, tool calls,
// checkpoint, progress and lifecycle to the session with its invocation's lease token.
describe.each(backends)('a Python ledger agent against runledger serve on $name', (backend) => {
  const procs: ChildProcess[] = [];
  afterEach(() => {
    for (const p of procs.splice(0)) p.kill('SIGKILL');
  });

  const start = async () => {
    const agent = await pythonAgent();
    procs.push(agent.proc);
    const database = await backend.create();
    const server = await serve(database, ['--agents', resolve('e2e/python-agents.mjs')], {
      RUNLEDGER_HTTP_ALLOW: '127.0.0.1',
      RUNLEDGER_TEST_PY_AGENT_URL: agent.url,
    });
    procs.push(server.proc);
    return {
      agent,
      server,
      database,
      logs: () => `--- agent ---\n${agent.output()}\n--- server ---\n${server.output()}`,
    };
  };

  it('records its lifecycle, nodes, tool calls (the high-risk one approved while it long-polls), checkpoint and progress; the session ends success', {
    timeout: 120_000,
  }, async () => {
    const { server, logs } = await start();
    const created = await call('POST', `${server.url}/sessions`, {
      agent: 'py-000',
      session_id: 'ses-py-1',
      input: { order: 7 },
    });
    expect(created.status, logs()).toBe(202);

    const blocked = await pendingApproval(server, 'ses-py-1');
    expect(blocked).toMatchObject({ tool_name: 'issue_refund', risk_level: 'high' });
    const approved = await call('POST', `${server.url}/agent/tool-calls/${blocked.id}/approve`, {
      by: 'ops@example.com',
      reason: 'order 7 checked',
    });
    expect(approved.status, JSON.stringify(approved.body)).toBe(200);

    const session = await eventually(async () => {
      const s = (await call('GET', `${server.url}/sessions/ses-py-1`)).body;
      return s.status === 'success' || s.status === 'failed' ? s : undefined;
    }, 30_000).catch((error) => {
      throw new Error(`${error}\n${logs()}`);
    });
    expect(session, logs()).toMatchObject({
      status: 'success',
      error_message: null,
      last_event: 'AGENT_BACKGROUND_TASK_COMPLETED',
    });

    const events = (await call('GET', `${server.url}/sessions/ses-py-1/events`)).body.events.map(
      (e: { type: string }) => e.type,
    );
    expect(events).toEqual([
      'SESSION_INITIATED',
      'AGENT_INVOCATION_STARTED',
      'AGENT_INVOCATION_SUCCEEDED',
      'AGENT_ENTRYPOINT_STARTED',
      'AGENT_BACKGROUND_TASK_STARTED',
      'AGENT_BACKGROUND_TASK_COMPLETED',
    ]);

    const run = (await call('GET', `${server.url}/agent/runs/ses-py-1`)).body;
    expect(run.status).toBe('success');
    expect(
      run.steps.map((s: { node: string; status: string; attempt: number }) => [s.node, s.status, s.attempt]),
    ).toEqual([
      ['classify', 'ok', 1],
      ['act', 'ok', 1],
    ]);
    expect(run.steps[0]).toMatchObject({ input_snapshot: { order: 7 }, output_snapshot: { intent: 'refund' } });
    expect(run.steps[1].output_snapshot).toEqual({ refund: { refund_id: 'rf_1' } });
    expect(
      run.tool_calls.map(
        (c: {
          tool_name: string;
          risk_level: string;
          node: string;
          status: string;
          approval_status: string | null;
          approval_by: string | null;
          output: unknown;
        }) => [c.tool_name, c.risk_level, c.node, c.status, c.approval_status, c.approval_by, c.output],
      ),
    ).toEqual([
      ['lookup_order', 'low', 'act', 'ok', null, null, { order: 7, total: 40 }],
      ['issue_refund', 'high', 'act', 'ok', 'approved', 'ops@example.com', { refund_id: 'rf_1' }],
    ]);
    // the agent's own checkpoint, beside the nodes' outputs
    expect(run.checkpoints).toContainEqual(
      expect.objectContaining({ node: 'act', state: { order: { order: 7, total: 40 } } }),
    );

    const progress = await call('GET', `${server.url}/sessions/ses-py-1/progress`);
    expect(progress.body).toMatchObject({ percent: 50, label: 'classified' });
  });

  it('kill -9 of the Python agent while its refund waits: the session times out failed, the refund never runs, and its lease token writes nothing afterwards', {
    timeout: 120_000,
  }, async () => {
    const { agent, server, database, logs } = await start();
    expect(
      (
        await call('POST', `${server.url}/sessions`, {
          agent: 'py-000-brief',
          session_id: 'ses-py-2',
          input: { order: 7 },
        })
      ).status,
    ).toBe(202);
    const blocked = await pendingApproval(server, 'ses-py-2');
    agent.proc.kill('SIGKILL');
    // approved after the agent died: nobody runs the refund, and no one reports
    expect(
      (await call('POST', `${server.url}/agent/tool-calls/${blocked.id}/approve`, { by: 'ops@example.com' })).status,
    ).toBe(200);

    const session = await eventually(async () => {
      const s = (await call('GET', `${server.url}/sessions/ses-py-2`)).body;
      return s.status === 'failed' ? s : undefined;
    }, 30_000).catch((error) => {
      throw new Error(`${error}\n${logs()}`);
    });
    expect(session.last_event, logs()).toBe('SESSION_TIMED_OUT');

    const before = (await call('GET', `${server.url}/agent/runs/ses-py-2`)).body;
    expect(before.tool_calls.find((c: { tool_name: string }) => c.tool_name === 'issue_refund')).toMatchObject({
      status: 'blocked',
      approval_status: 'approved',
      output: null,
    });

    // the dead attempt's token, from the journal, as a stray thread of the agent would still hold it
    const engine = await createEngine({ database, workers: false });
    let token: string;
    try {
      const invoked = (await engine.journal.readStream(remoteStream('ses-py-2'), { limit: 1000 })).filter(
        (e) => e.type === REMOTE_EVENT.invoked,
      );
      expect(invoked).toHaveLength(1);
      token = (invoked[0]!.data as { token: string }).token;
    } finally {
      await engine.close();
    }
    const stale = [
      await call('POST', `${server.url}/sessions/ses-py-2/tool-calls/${blocked.id}/result`, {
        lease_token: token,
        output: { refund_id: 'rf_late' },
      }),
      await call('POST', `${server.url}/sessions/ses-py-2/checkpoints`, {
        lease_token: token,
        state: { late: true },
        node: 'act',
      }),
      await call('POST', `${server.url}/sessions/ses-py-2/lifecycle`, {
        lease_token: token,
        status: 'AGENT_BACKGROUND_TASK_COMPLETED',
      }),
    ];
    // a field this server does not know is ignored (docs/protocol.md, versioning): the answer is about the write, not a 400
    stale.push(
      await call('POST', `${server.url}/sessions/ses-py-2/progress`, {
        lease_token: token,
        percent: 99,
        sent_by: 'a newer SDK',
      }),
    );
    // its token still names the newest invocation, but the session has ended: 409 conflict; a token of none is 409 lease_lost
    stale.push(
      await call('POST', `${server.url}/sessions/ses-py-2/progress`, { lease_token: 'lt_made_up', percent: 99 }),
    );
    expect(stale.map((a) => [a.status, a.body.error.code])).toEqual([
      [409, 'conflict'],
      [409, 'conflict'],
      [409, 'conflict'],
      [409, 'conflict'],
      [409, 'lease_lost'],
    ]);
    expect((await call('GET', `${server.url}/agent/runs/ses-py-2`)).body).toEqual(before);
    expect((await call('GET', `${server.url}/sessions/ses-py-2`)).body).toMatchObject({
      status: 'failed',
      last_event: 'SESSION_TIMED_OUT',
    });
    expect((await call('GET', `${server.url}/sessions/ses-py-2/progress`)).body).toMatchObject({
      percent: 50,
      label: 'classified',
    });
  });
});
