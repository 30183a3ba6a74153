import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { runCli as run, serve, type Served } from './child.js';

/* The flow-control flags of `runledger start` (throttle, debounce, batch, budget) and `runledger queues limit`, the real binary against a real server. */

describe.each(backends)('flow control on the command line on $name', (backend) => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-flow-cli-'));
  let server: Served;
  const at = (...args: string[]) => run([...args, '--url', server.url]);
  const started = async (...args: string[]) => {
    const answer = await at('start', ...args, '--json');
    expect(answer.code, answer.stderr).toBe(0);
    return JSON.parse(answer.stdout) as { run_id: string; status: string };
  };
  const view = async (id: string) =>
    (await (await fetch(`${server.url}/runs/${id}`)).json()) as {
      status: string;
      waiting_for: string | null;
      budget: Record<string, unknown> | null;
      output: unknown;
    };

  beforeAll(async () => {
    const module = join(dir, 'workflows.mjs');
    writeFileSync(
      module,
      `import { workflow } from '${resolve('dist/index.js')}';
export const two = workflow('cli-two', async (ctx, input) => {
  const a = await ctx.step('a', async () => input.n);
  return ctx.step('b', async () => a + 2);
});
export const ns = workflow('cli-ns', async (ctx, inputs) => ctx.step('ns', async () => inputs.map((i) => i.n)));`,
    );
    server = await serve(await backend.create(), ['--workflows', module], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
  }, 60_000);
  afterAll(() => void server?.proc.kill('SIGKILL'));

  it('throttles with --throttle <limit>/<period> and --throttle-key: the second start of the key is delayed', {
    timeout: 120_000,
  }, async () => {
    const flags = ['--throttle', '1/1h', '--throttle-key', 'input.k'];
    const first = await started('cli-two', '--input', '{"k":"a","n":1}', ...flags);
    const second = await started('cli-two', '--input', '{"k":"a","n":1}', ...flags);
    const other = await started('cli-two', '--input', '{"k":"b","n":1}', ...flags);
    await eventually(async () => (await view(first.run_id)).status === 'success');
    await eventually(async () => (await view(other.run_id)).status === 'success');
    const held = await view(second.run_id);
    expect(held.status).toBe('waiting');
    expect(held.waiting_for).toMatch(/^throttled until \d{4}-/);
    expect((await at('runs', 'cancel', second.run_id)).code).toBe(0);
  });

  it('debounces with --debounce, --debounce-key, --debounce-max-wait and --debounce-mode: one run per window', {
    timeout: 120_000,
  }, async () => {
    const flags = ['--debounce', '1h', '--debounce-key', 'input.chat', '--debounce-max-wait', '2h'];
    const first = await started('cli-two', '--input', '{"chat":"c1","n":1}', ...flags, '--debounce-mode', 'all');
    const again = await started('cli-two', '--input', '{"chat":"c1","n":2}', ...flags, '--debounce-mode', 'all');
    expect(again.run_id).toBe(first.run_id);
    const windowed = await view(first.run_id);
    expect(windowed.waiting_for).toMatch(/^debounced until \d{4}-/);
    expect((await at('runs', 'cancel', first.run_id)).code).toBe(0);
  });

  it('batches with --batch-size, --batch-timeout and --batch-key: the starts of a key become one run', {
    timeout: 120_000,
  }, async () => {
    const flags = ['--batch-size', '2', '--batch-timeout', '1h', '--batch-key', 'input.k'];
    const first = await started('cli-ns', '--input', '{"k":"a","n":1}', ...flags);
    expect((await view(first.run_id)).waiting_for).toMatch(/^batch 1 of 2 — until \d{4}-/);
    const second = await started('cli-ns', '--input', '{"k":"a","n":2}', ...flags);
    expect(second.run_id).toBe(first.run_id);
    await eventually(async () => (await view(first.run_id)).status === 'success');
    expect((await view(first.run_id)).output).toEqual([1, 2]);
  });

  it('gives the run a budget with --budget-*: over it, the run waits for approval, then goes on', {
    timeout: 120_000,
  }, async () => {
    const { run_id } = await started(
      'cli-two',
      '--input',
      '{"n":1}',
      '--budget-steps',
      '1',
      '--budget-on-exceed',
      'approve',
    );
    await eventually(async () => (await view(run_id)).waiting_for === 'budget: 2 of 1 steps — approve to continue');
    expect((await view(run_id)).budget).toMatchObject({ steps: 1, on_exceed: 'approve' });
    expect((await at('runs', 'approve-budget', run_id, '--by', 'ana', '--steps', '1')).code).toBe(0);
    await eventually(async () => (await view(run_id)).status === 'success');
    expect((await view(run_id)).output).toBe(3);
    const capped = await started('cli-two', '--input', '{"n":1}', '--budget-steps', '1', '--budget-wall-time', '1h');
    await eventually(async () => (await view(capped.run_id)).status === 'failed');
  });

  it('names the flag of a bad value, whether the command line or the server finds it', {
    timeout: 120_000,
  }, async () => {
    const refused = async (args: string[], message: RegExp) => {
      const answer = await at('start', 'cli-two', '--input', '{"n":1,"k":"a"}', ...args);
      expect(answer.code, answer.stdout).toBe(1);
      expect(answer.stderr).toMatch(message);
    };
    await refused(['--throttle', 'ten/1m'], /--throttle: must be a whole number/);
    await refused(['--throttle', '10'], /--throttle: must be <limit>\/<period>/);
    await refused(['--throttle', '0/1m'], /--throttle: .*\(throttle\.limit\)/);
    await refused(['--throttle', '1/1ms'], /--throttle: .*\(throttle\.period\)/);
    await refused(['--throttle-key', 'input.k'], /--throttle-key: needs --throttle/);
    await refused(['--debounce', '1s', '--debounce-mode', 'first'], /--debounce-mode: must be last or all/);
    await refused(['--debounce-max-wait', '1m'], /--debounce-max-wait: needs --debounce/);
    await refused(['--debounce', 'soon'], /--debounce: .*\(debounce\.period\)/);
    await refused(['--batch-size', '0', '--batch-timeout', '1s'], /--batch-size: .*\(batch\.max_size\)/);
    await refused(['--batch-key', 'input.k'], /--batch-key: needs --batch-size/);
    await refused(['--budget-tokens', 'many'], /--budget-tokens: must be a whole number/);
    await refused(['--budget-cost', '-1'], /--budget-cost: must be a positive number/);
    await refused(['--budget-tool-calls', '0'], /--budget-tool-calls: .*\(budget\.tool_calls\)/);
    await refused(['--budget-on-exceed', 'approve'], /--budget-on-exceed: needs a cap/);
    await refused(['--budget-steps', '2', '--budget-on-exceed', 'ask'], /--budget-on-exceed: must be fail or approve/);
  });

  it('shows, sets and removes a queue limit with runledger queues limit', { timeout: 120_000 }, async () => {
    expect((await at('queues', 'limit', 'cli-q')).stdout).toBe('cli-q: no limit\n');
    expect((await at('queues', 'limit', 'cli-q', '--limit', '3')).stdout).toBe(
      'cli-q: at most 3 running at once, across every worker\n',
    );
    expect(JSON.parse((await at('queues', 'limit', 'cli-q', '--json')).stdout)).toEqual({
      queue: 'cli-q',
      concurrency: 3,
    });
    const limited = (await (await fetch(`${server.url}/queues/cli-q/limit`)).json()) as { concurrency: number };
    expect(limited.concurrency).toBe(3);
    expect((await at('queues', 'limit', 'cli-q', '--remove')).stdout).toBe('cli-q: no limit\n');
    expect(
      ((await (await fetch(`${server.url}/queues/cli-q/limit`)).json()) as { concurrency: null }).concurrency,
    ).toBe(null);
    const bad = await at('queues', 'limit', 'cli-q', '--limit', '0');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--limit: must be a whole number from 1 to 1000000/);
    const both = await at('queues', 'limit', 'cli-q', '--limit', '2', '--remove');
    expect(both.stderr).toMatch(/--remove: sets no limit/);
  });
});
