import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockServices, type MockServices } from '../src/mock-services/index.js';
import { createSqlitePath } from '../src/testing/databases.js';
import { eventually } from '../src/testing/engine.js';
import { cli, serve, type Served } from './child.js';

const quick = { initial_delay_seconds: 0.01, interval_seconds: 0.05, factor: 1.5, max_interval_seconds: 0.1 };

/** A render (which never ends: a fault) polled; its cancel confirmed by polling the job (brief 004 §8.1). */
function renderWorkflow(url: string, name: string) {
  const job = `${url}/v1/render/jobs/{{steps.render.output.body.render_job_id}}`;
  return {
    name,
    steps: [
      {
        id: 'render',
        type: 'http_request',
        config: { method: 'POST', url: `${url}/v1/render/documents`, body: { lsp: { pages: [{ index: 1 }] } } },
      },
      {
        id: 'render_wait',
        type: 'poll',
        config: { url: job, until: { path: 'body.status', equals: 'complete' }, ...quick, max_wait_seconds: 120 },
        cancel: {
          method: 'POST',
          url: `${job}/cancel`,
          until: { url: job, until: { path: 'body.status', equals: 'cancelled' }, ...quick, max_wait_seconds: 30 },
        },
      },
    ],
  };
}

/** Its own tmux server (`-L`), killed at the end: a real terminal for the question. */
const socket = `runledger-interrupt-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-J', '-S', '-200', '-t', 'ctrlc:0');

describe('Ctrl-C on runledger start --wait (brief 004 §8.1)', () => {
  let mock: MockServices;
  let server: Served;
  let applied = 0;
  const api = async (path: string, init: RequestInit = {}) =>
    (await fetch(`${server.url}${path}`, { headers: { 'content-type': 'application/json' }, ...init })).json();
  const apply = async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rl-interrupt-')), 'render.json');
    writeFileSync(file, JSON.stringify(renderWorkflow(mock.url, `render-${++applied}`)));
    const applying = cli(['workflows', 'apply', file, '--url', server.url]);
    await applying.exited;
    return /created (wf_\S+)/.exec(applying.output())![1]!;
  };
  /** Waits until the execution polls its render job (the render hangs: a fault). */
  const rendering = (before: number) =>
    eventually(async () => mock.calls({ method: 'GET', path: '/v1/render/jobs/{id}' }).length >= before + 2, 20_000);

  beforeAll(async () => {
    mock = await startMockServices({ speed: 20, seed: 5 });
    mock.setFaults([
      { endpoint: 'POST /v1/render/documents', job: 'hang', times: 'always' },
      { endpoint: 'POST /v1/render/jobs/{id}/cancel', cancel: 'async', cancelling_polls: 2, times: 'always' },
    ]);
    server = await serve(createSqlitePath(), [], { RUNLEDGER_HTTP_ALLOW: '127.0.0.1', RUNLEDGER_POLL_MS: '100' });
  });
  afterAll(async () => {
    try {
      tmux('kill-server');
    } catch {
      // never started, or already gone
    }
    server?.proc.kill('SIGTERM');
    await server?.exited;
    await mock?.close();
  });

  it('without a terminal, detaches: prints how to follow the run, which goes on', async () => {
    const wid = await apply();
    const before = mock.calls({ method: 'GET', path: '/v1/render/jobs/{id}' }).length;
    const c = cli(['start', wid, '--wait', '--url', server.url]);
    await rendering(before);
    const eid = await eventually(() => /execution (ex_\S+)/.exec(c.output())?.[1]);
    c.proc.kill('SIGINT');
    expect((await c.exited).code, c.output()).toBe(130);
    expect(c.output()).toContain(`detached: the run goes on. follow it:  runledger events ${eid}`);
    expect(c.output()).not.toContain('cancel the run?');
    expect((await api(`/workflows/${wid}/executions/${eid}`)).status).toBe('running');
    await api(`/workflows/${wid}/executions/${eid}/cancel`, { method: 'POST', body: '{}' });
  });

  it('at a terminal, asks; y cancels it from the terminal and waits until the service confirmed the cancel', async () => {
    const wid = await apply();
    const before = mock.calls({ method: 'GET', path: '/v1/render/jobs/{id}' }).length;
    tmux('new-session', '-d', '-s', 'ctrlc', '-x', '200', '-y', '50', 'bash', '--norc', '--noprofile');
    const bin = `node ${resolve('bin/runledger.js')}`;
    tmux('send-keys', '-t', 'ctrlc:0', '-l', `${bin} start ${wid} --wait --url ${server.url}; echo "__exit=$?"`);
    tmux('send-keys', '-t', 'ctrlc:0', 'Enter');
    await rendering(before);
    const eid = await eventually(() => /execution (ex_\S+)/.exec(screen())?.[1], 20_000);
    tmux('send-keys', '-t', 'ctrlc:0', 'C-c');
    await eventually(() => screen().includes('cancel the run? [y/N]'), 20_000);
    tmux('send-keys', '-t', 'ctrlc:0', '-l', 'y');
    tmux('send-keys', '-t', 'ctrlc:0', 'Enter');
    const text = await eventually(() => (/__exit=\d+/.test(screen()) ? screen() : undefined), 30_000);
    expect(text).toContain('cancelling (cancelled from the terminal); waiting for it to end…');
    expect(text).toContain('render_wait: cancel sent, waiting for the service to confirm it');
    expect(text).toContain('render_wait: cancel confirmed (3 polls)');
    expect(text).toMatch(new RegExp(`execution ${eid} cancelled`));
    expect(text).toContain('__exit=1');
    const record = await api(`/workflows/${wid}/executions/${eid}`);
    expect(record).toMatchObject({ status: 'cancelled', cancel_reason: 'cancelled from the terminal' });
    // the job answered cancelling twice, then cancelled: only then did the execution end
    expect(record.steps.find((s: { step_id: string }) => s.step_id === 'render_wait').cancel).toEqual({
      status: 'confirmed',
      polls: 3,
      reason: null,
    });
  });
});
