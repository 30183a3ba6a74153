import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
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

// The Python SDK's own suite (clients/python/tests/integration) against a real `runledger serve`:
// the protocol round trip, a worker draining 300 tasks, and kill -9 of a worker mid-task.
describe.each(backends)('the Python SDK against runledger serve on $name', (backend) => {
  const servers: Served[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.proc.kill('SIGKILL');
  });

  it('passes its integration suite', { timeout: 180_000 }, async () => {
    const served = await serve(await backend.create(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    servers.push(served);
    const run = await python(['-m', 'unittest', 'discover', '-v', '-s', resolve('clients/python/tests/integration')], {
      RUNLEDGER_URL: served.url,
    });
    expect(run.code, `${run.output}\n--- server ---\n${served.output()}`).toBe(0);
    expect(run.output).toMatch(/Ran 7 tests/);
    expect(run.output).toMatch(/^OK$/m); // "OK (skipped=…)" would not match
    expect(run.output).toContain('test_kill_9_mid_task_loses_nothing_and_repeats_no_side_effect');
  });

  it('fails when the server is not there (RUNLEDGER_URL unset): nothing is skipped', { timeout: 60_000 }, async () => {
    const run = await python(['-m', 'unittest', 'discover', '-s', resolve('clients/python/tests/integration')], {
      RUNLEDGER_URL: '',
    });
    expect(run.code, run.output).not.toBe(0);
    expect(run.output).toMatch(/RUNLEDGER_URL: set it/);
  });
});

describe('the Python SDK', () => {
  it('passes its unit tests (an in-process fake server, no runledger)', { timeout: 120_000 }, async () => {
    const run = await python(['-m', 'unittest', 'discover', '-s', resolve('clients/python/tests')], {});
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/Ran \d+ tests/);
    expect(run.output).toMatch(/^OK$/m);
  });
});
