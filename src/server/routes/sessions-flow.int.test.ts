import { describe, expect, it } from 'vitest';
import { defineAgent } from '../../agents/agent.js';
import { backends } from '../../testing/backends.js';
import { eventually } from '../../testing/engine.js';
import { useServer } from '../test-server.js';

// The agent's flow is in code; a session started over HTTP may give its own priority and budget, each replacing the
// agent's, checked as POST /runs checks them.
const research = defineAgent('research', {
  flow: { priority: 1, budget: { tokens: 100 } },
  background: async () => {},
});

describe.each(backends)('POST /sessions with priority and budget on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 100, agents: [research] });
  const { call } = served;
  const run = async (id: string) => (await served.server.engine.runs.find(id))!;

  it("gives the session's run the start's priority and budget, each replacing the agent's", async () => {
    const given = await call('POST', '/sessions', {
      agent: 'research',
      priority: 7,
      budget: { steps: 50, wall_time: '1h', on_exceed: 'approve' },
    });
    expect(given.status).toBe(202);
    const view = await run(given.body.session_id);
    expect(view.priority).toBe(7);
    expect(view.budget).toEqual({ steps: 50, wallTime: '1h', onExceed: 'approve' });
    expect((await call('GET', `/runs/${given.body.session_id}`)).body.budget).toMatchObject({
      tokens: null,
      steps: 50,
      on_exceed: 'approve',
    });

    const own = await call('POST', '/sessions', { agent: 'research', priority: -3 });
    expect((await run(own.body.session_id)).priority).toBe(-3);
    expect((await run(own.body.session_id)).budget).toEqual({ tokens: 100 });

    const plain = await call('POST', '/sessions', { agent: 'research' });
    expect((await run(plain.body.session_id)).priority).toBe(1);
    expect((await run(plain.body.session_id)).budget).toEqual({ tokens: 100 });
  });

  it('takes them through an Idempotency-Key; a repeat starts nothing', async () => {
    const start = () =>
      fetch(`${served.server.url}/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': `k-${backend.name}` },
        body: JSON.stringify({ agent: 'research', priority: 9, budget: { cost: 2 } }),
      }).then((r) => r.json() as Promise<{ session_id: string }>);
    const first = await start();
    expect((await start()).session_id).toBe(first.session_id);
    const view = await run(first.session_id);
    expect([view.priority, view.budget]).toEqual([9, { cost: 2 }]);
  });

  it('runs under the given budget: a session given steps: 1 fails naming the budget', async () => {
    const started = await call('POST', '/sessions', { agent: 'research', budget: { steps: 1 } });
    const ended = await eventually(async () => {
      const view = await run(started.body.session_id);
      return view.status === 'failed' || view.status === 'success' ? view : undefined;
    }, 30_000);
    expect(ended.status).toBe('failed');
    expect(JSON.stringify(ended.error)).toContain('budget: 2 of 1 steps');
  });

  it('refuses a bad priority or budget with 400 naming the field', async () => {
    const problems = async (body: Record<string, unknown>) => {
      const answer = await call('POST', '/sessions', { agent: 'research', ...body });
      expect(answer.status).toBe(400);
      return (answer.body.error.problems as Array<{ path: string; message: string }>).map((p) => p.path);
    };
    expect(await problems({ priority: 101 })).toEqual(['priority']);
    expect(await problems({ budget: { tokens: 0 } })).toEqual(['budget.tokens']);
    expect(await problems({ budget: { wall_time: '1 fortnight' } })).toEqual(['budget.wall_time']);
    expect(await problems({ budget: { tool_calls: 1.5 } })).toEqual(['budget.tool_calls']);
    expect(await problems({ budget: {} })).toEqual(['budget']);
    expect(await problems({ budget: { tokens: 10, on_exceed: 'ask' } })).toEqual(['budget.on_exceed']);
  });

  it('shows them in the OpenAPI document', async () => {
    const { body } = await call('GET', '/openapi.json');
    const schema = body.paths['/sessions'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(['priority', 'budget']));
    expect(Object.keys(schema.properties.budget.properties)).toContain('tool_calls');
  });
});
