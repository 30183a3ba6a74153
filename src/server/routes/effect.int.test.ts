import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.js';
import { output } from '../../cli/output.js';
import { workflow } from '../../runtime/workflow.js';
import { backends } from '../../testing/backends.js';
import { eventually } from '../../testing/engine.js';
import { useServer } from '../test-server.js';

const charges: string[] = [];

/** A charge whose first call goes through but hangs past the step's timeout: its outcome is unknown. */
const charge = workflow('effect-http', async (ctx) =>
  ctx.step(
    'charge',
    async ({ idempotencyKey, signal }) => {
      charges.push(idempotencyKey);
      if (charges.filter((c) => c === idempotencyKey).length === 1)
        await new Promise((_, reject) => signal.addEventListener('abort', reject));
      return 'charged again';
    },
    { effect: { atMostOnce: true }, timeout: '100ms', retry: { maxAttempts: 3, backoff: { base: '10ms' } } },
  ),
);

describe.each(backends)('deciding an unknown effect over HTTP on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 100, codeWorkflows: [charge] });
  const { call } = served;
  const waiting = (id: string) =>
    eventually(async () => {
      const { body } = await call('GET', `/runs/${id}`);
      return body.effect_wait ? body : undefined;
    }, 20_000);

  it('shows the unknown effect, takes a decision with who made it, refuses bad input naming the field', async () => {
    const { body: started } = await call('POST', '/runs', { workflow: 'effect-http' });
    const id = started.run_id as string;
    const run = await eventually(async () => {
      const { body } = await call('GET', `/runs/${id}`);
      return body.effect_wait ? body : undefined;
    }, 20_000);
    expect(run).toMatchObject({ status: 'waiting', effect_wait: { seq: 1, name: 'charge', attempt: 1 } });
    expect(run.steps[0].effect).toBe('unknown');
    const bad = await call('POST', `/runs/${id}/effect/decide`, { decision: 'maybe', by: 'ana' });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain('decision');
    const notHappened = await call('POST', `/runs/${id}/effect/decide`, { decision: 'fail', by: 'ana', output: 1 });
    expect(notHappened.status).toBe(400);
    expect(JSON.stringify(notHappened.body)).toContain('output');
    expect((await call('POST', '/runs/run_nope/effect/decide', { decision: 'again', by: 'ana' })).status).toBe(404);
    const decided = await call('POST', `/runs/${id}/effect/decide`, {
      decision: 'happened',
      by: 'ana',
      output: 'receipt 9',
    });
    expect(decided).toEqual({
      status: 202,
      body: { run_id: id, decision: 'happened', seq: 1, name: 'charge', attempt: 1 },
    });
    const done = await eventually(async () => {
      const { body } = await call('GET', `/runs/${id}`);
      return body.status === 'success' ? body : undefined;
    }, 20_000);
    expect(done.output).toBe('receipt 9');
    expect(done.steps[0].effect).toBe('reconciled');
    expect(charges.filter((c) => c.startsWith(id))).toHaveLength(1);
    expect((await call('POST', `/runs/${id}/effect/decide`, { decision: 'again', by: 'ana' })).status).toBe(409);
  });

  it('takes a decision from the CLI: runs decide-effect --again runs the step once more', async () => {
    const { body: started } = await call('POST', '/runs', { workflow: 'effect-http' });
    const id = started.run_id as string;
    await waiting(id);
    let printed = '';
    const cli = (...args: string[]) =>
      main(
        ['node', 'runledger', 'runs', 'decide-effect', id, ...args, '--url', served.server.url, '--json'],
        output((text) => (printed += text), false),
      );
    await expect(cli('--by', 'bo')).rejects.toThrow(/exactly one of --happened, --again, --fail/);
    await cli('--again', '--by', 'bo');
    expect(JSON.parse(printed)).toMatchObject({ run_id: id, decision: 'again', name: 'charge' });
    const done = await eventually(async () => {
      const { body } = await call('GET', `/runs/${id}`);
      return body.status === 'success' ? body : undefined;
    }, 20_000);
    expect(done.output).toBe('charged again');
    expect(done.steps[0].effect).toBe('repeated');
    expect(charges.filter((c) => c.startsWith(id))).toHaveLength(2);
  });
});
