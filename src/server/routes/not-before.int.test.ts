import { describe, expect, it } from 'vitest';
import { main } from '../../cli/main.js';
import { output } from '../../cli/output.js';
import { workflow } from '../../runtime/workflow.js';
import { backends } from '../../testing/backends.js';
import { eventually } from '../../testing/engine.js';
import { useServer } from '../test-server.js';

const later = workflow('not-before-http', async (ctx, input: { n: number }) => ctx.step('echo', async () => input.n));

describe.each(backends)('not_before on POST /runs on $name', (backend) => {
  const served = useServer(backend, { workers: true, pollMs: 100, codeWorkflows: [later] });
  const { call } = served;
  const run = async (id: string) => (await call('GET', `/runs/${id}`)).body as Record<string, unknown>;

  it('holds the run until its time (ISO or ms), then runs it', async () => {
    const at = Date.now() + 1_500;
    const iso = new Date(at).toISOString();
    const { status, body } = await call('POST', '/runs', {
      workflow: 'not-before-http',
      input: { n: 1 },
      not_before: iso,
    });
    expect(status).toBe(202);
    const first = await run(body.run_id as string);
    expect(first.status).toBe('waiting');
    expect(first.waiting_for).toBe(`not before ${iso}`);
    const ms = await call('POST', '/runs', { workflow: 'not-before-http', input: { n: 2 }, not_before: at });
    expect((await run(ms.body.run_id as string)).status).toBe('waiting');
    for (const id of [body.run_id, ms.body.run_id] as string[]) {
      const done = await eventually(async () => {
        const view = await run(id);
        return view.status === 'success' ? view : undefined;
      });
      // its code began no earlier than its time
      expect(Date.parse(done.created_at as string)).toBeLessThan(at);
      const steps = done.steps as Array<{ started_at: string }>;
      expect(Date.parse(steps[0]!.started_at)).toBeGreaterThanOrEqual(at - 50);
    }
    // a time past is now
    const past = await call('POST', '/runs', { workflow: 'not-before-http', input: { n: 3 }, not_before: 0 });
    expect(past.status).toBe(202);
  });

  it('runledger start --not-before holds the run until then; a time too far is told as the flag', async () => {
    const cli = async (...args: string[]) => {
      let printed = '';
      await main(
        ['node', 'runledger', ...args, '--url', served.server.url, '--json'],
        output((t) => (printed += t), false),
      );
      return JSON.parse(printed) as Record<string, unknown>;
    };
    const iso = new Date(Date.now() + 60_000).toISOString();
    const started = await cli('start', 'not-before-http', '--input', '{"n":4}', '--not-before', iso);
    const view = await run(started.run_id as string);
    expect(view.status).toBe('waiting');
    expect(view.waiting_for).toBe(`not before ${iso}`);
    const far = new Date(Date.now() + 400 * 24 * 3_600_000).toISOString();
    await expect(cli('start', 'not-before-http', '--input', '{"n":5}', '--not-before', far)).rejects.toThrow(
      /^--not-before: must be at most 1 year ahead/,
    );
  });

  it('refuses a bad not_before naming the field, and one more than a year ahead', async () => {
    const bad = async (value: unknown) => {
      const answer = await call('POST', '/runs', { workflow: 'not-before-http', input: { n: 1 }, not_before: value });
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(JSON.stringify(answer.body)).toContain('not_before');
      return JSON.stringify(answer.body);
    };
    expect(await bad('tomorrow')).toContain('ISO 8601');
    expect(await bad('2026-13-45T00:00:00Z')).toContain('ISO 8601');
    await bad(-1);
    await bad(1.5);
    await bad(true);
    expect(await bad(Date.now() + 400 * 24 * 3_600_000)).toContain('at most 1 year ahead');
    expect(await bad(new Date(Date.now() + 400 * 24 * 3_600_000).toISOString())).toContain('at most 1 year ahead');
  });
});
