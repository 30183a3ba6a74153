import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { serve, type Served } from './child.js';

/** `python3 …args` to its end with `env`; resolves with its exit code and everything it printed. */
function python(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const proc = spawn('python3', args, {
      env: { ...process.env, PYTHONPATH: resolve('clients/python'), PYTHONDONTWRITEBYTECODE: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (chunk) => (output += chunk));
    proc.stderr.on('data', (chunk) => (output += chunk));
    proc.on('error', fail);
    proc.on('exit', (code) => done({ code, output }));
  });
}

const SUITE = resolve('clients/python/tests/flow');

// `Client.start` of the Python SDK (clients/python/tests/flow) against a real `runledger serve` with code workflows:
// a priority and a concurrency limit (the second run of the key waits, then completes), a budget, a debounce, not_before, errors.
describe.each(backends)('starting runs from Python on $name', (backend) => {
  const servers: Served[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
  });

  it('passes its start suite', { timeout: 120_000 }, async () => {
    const module = join(mkdtempSync(join(tmpdir(), 'rl-py-start-')), 'workflows.mjs');
    writeFileSync(
      module,
      `import { workflow } from '${resolve('dist/index.js')}';
export const held = workflow('py-held', async (ctx, input) => ({ user: input.user, got: await ctx.waitForEvent('go') }));
export const two = workflow('py-two', async (ctx, input) => {
  const a = await ctx.step('a', async () => input.n);
  return ctx.step('b', async () => a + 2);
});
export const chat = workflow('py-chat', async (_ctx, input) => input.text);`,
    );
    const served = await serve(await backend.create(), ['--workflows', module], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    servers.push(served);
    const run = await python(['-m', 'unittest', 'discover', '-v', '-s', SUITE], { RUNLEDGER_URL: served.url });
    expect(run.code, `${run.output}\n--- server ---\n${served.output()}`).toBe(0);
    expect(run.output).toMatch(/Ran 7 tests/);
    expect(run.output).toMatch(/^OK$/m);
    expect(run.output).toContain('test_a_run_with_a_priority_and_a_concurrency_limit_waits_its_turn_and_completes');
  });

  it('fails when the server is not there (RUNLEDGER_URL unset): nothing is skipped', { timeout: 60_000 }, async () => {
    const run = await python(['-m', 'unittest', 'discover', '-s', SUITE], { RUNLEDGER_URL: '' });
    expect(run.code, run.output).not.toBe(0);
    expect(run.output).toMatch(/RUNLEDGER_URL: set it/);
  });
});
