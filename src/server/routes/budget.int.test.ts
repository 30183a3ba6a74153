import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.js';
import { output } from '../../cli/output.js';
import { workflow } from '../../runtime/workflow.js';
import { backends } from '../../testing/backends.js';
import { eventually } from '../../testing/engine.js';
import { useServer } from '../test-server.js';

const metered = workflow('budget-http', { budget: { tokens: 100, onExceed: 'approve' } }, async (ctx) => {
  await ctx.step('ask', async () => 'answer');
  await ctx.usage({ tokens: 150, cost: 0.25, toolCalls: 3 });
  return ctx.step('after', async () => 'went on');
});

describe.each(backends)('budget decisions over HTTP and the CLI on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 100, codeWorkflows: [metered] });
  const { call } = served;
  /** `runledger …args --url <server> --json`, in this process: its parsed answer. */
  const cli = async (...args: string[]) => {
    let printed = '';
    await main(
      ['node', 'runledger', ...args, '--url', served.server.url, '--json'],
      output((text) => (printed += text), false),
    );
    return JSON.parse(printed);
  };
  const waiting = (id: string) =>
    eventually(async () => {
      const { body } = await call('GET', `/runs/${id}`);
      return body.status === 'waiting' ? body : undefined;
    });
  const ended = (id: string) =>
    eventually(async () => {
      const { body } = await call('GET', `/runs/${id}`);
      return ['success', 'failed'].includes(body.status) ? body : undefined;
    });

  it('shows the usage and the budget, approves over HTTP with an extension, and refuses bad input', async () => {
    const { body: started } = await call('POST', '/runs', { workflow: 'budget-http' });
    const id = started.run_id as string;
    const run = await waiting(id);
    expect(run.usage).toEqual({ tokens: 150, cost: 0.25, tool_calls: 3, steps: 1 });
    expect(run.budget).toEqual({
      tokens: 100,
      cost: null,
      tool_calls: null,
      steps: null,
      wall_time: null,
      on_exceed: 'approve',
    });
    const bad = await call('POST', `/runs/${id}/budget/approve`, { by: 'ana', extend: { tokens: -5 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('extend.tokens');
    expect((await call('POST', `/runs/${id}/budget/approve`, {})).status).toBe(400);
    expect((await call('POST', '/runs/run_nope/budget/approve', { by: 'ana' })).status).toBe(404);
    const approved = await call('POST', `/runs/${id}/budget/approve`, { by: 'ana', extend: { tokens: 1000 } });
    expect(approved).toEqual({
      status: 202,
      body: {
        run_id: id,
        decision: 'approve',
        round: 1,
        reason: 'budget: 150 of 100 tokens — approve to continue',
      },
    });
    const done = await ended(id);
    expect(done.status).toBe('success');
    expect(done.budget.tokens).toBe(1100);
    expect(done.usage).toEqual({ tokens: 150, cost: 0.25, tool_calls: 3, steps: 2 });
    // nothing waits for a decision any more
    expect((await call('POST', `/runs/${id}/budget/reject`, { by: 'ana' })).status).toBe(409);
  });

  it("takes a start's budget over the workflow's (POST /runs), and fails the run over it", async () => {
    const { body } = await call('POST', '/runs', { workflow: 'budget-http', budget: { steps: 1 } });
    const run = await ended(body.run_id);
    expect(run.status).toBe('failed');
    expect(run.error).toBe('BudgetExceededError: budget: 2 of 1 steps');
    expect(run.budget).toMatchObject({ steps: 1, tokens: null, on_exceed: 'fail' });
    expect(run.usage).toEqual({ tokens: 150, cost: 0.25, tool_calls: 3, steps: 1 });
  });

  it('approves and rejects from the command line', async () => {
    const first = (await call('POST', '/runs', { workflow: 'budget-http' })).body.run_id as string;
    await waiting(first);
    expect(await cli('runs', 'approve-budget', first, '--by', 'ci', '--tokens', '500')).toMatchObject({
      run_id: first,
      decision: 'approve',
      round: 1,
    });
    expect((await ended(first)).status).toBe('success');

    const second = (await call('POST', '/runs', { workflow: 'budget-http' })).body.run_id as string;
    await waiting(second);
    expect(await cli('runs', 'approve-budget', second, '--by', 'ci', '--reject')).toMatchObject({
      decision: 'reject',
    });
    const failed = await ended(second);
    expect(failed.status).toBe('failed');
    expect(failed.error).toBe('BudgetExceededError: budget: 150 of 100 tokens — rejected by ci');
  });
});
