import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backends } from '../src/testing/backends.js';
import { eventually } from '../src/testing/engine.js';
import { cli, type Cli, freePort } from './child.js';

/** The service the workflow registers its callback with: it keeps each registration and answers 202. */
async function renderService(): Promise<{ url: string; registrations: { callback_url: string }[]; server: Server }> {
  const registrations: { callback_url: string }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      registrations.push(JSON.parse(text));
      res.writeHead(202, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, registrations, server };
}

const awaitRender = (service: string) => ({
  name: 'await-render',
  steps: [
    {
      id: 'await_render',
      type: 'wait_for_callback',
      timeout_seconds: 120,
      config: { request: { method: 'POST', url: `${service}/register`, body: { callback_url: '{{callback.url}}' } } },
    },
    {
      id: 'deliver',
      type: 'transform',
      config: { mapping: { artifact: '{{steps.await_render.output.artifact_id}}' } },
    },
  ],
});

async function api(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

describe.each(backends)('callback URLs across serve --no-workers and a worker on $name', (backend) => {
  const procs: Cli[] = [];
  const servers: Server[] = [];
  afterEach(async () => {
    for (const p of procs.splice(0)) {
      p.proc.kill('SIGKILL');
      await p.exited;
    }
    for (const s of servers.splice(0)) s.close();
  });

  /** `serve --no-workers` on a fixed port and a `worker`, one database, one key, `publicUrl` set in both (or in neither). */
  async function deployment(publicUrl: (port: number) => string | undefined) {
    const database = await backend.create();
    const port = await freePort();
    const shared = {
      RUNLEDGER_SECRET_KEY: randomBytes(32).toString('hex'),
      RUNLEDGER_DATA_DIR: mkdtempSync(join(tmpdir(), 'rl-public-url-')),
      RUNLEDGER_POLL_MS: '100',
      RUNLEDGER_PUBLIC_URL: publicUrl(port) ?? '',
      RUNLEDGER_LOG_LEVEL: 'warn',
    };
    const server = cli(['serve', '--no-workers', '--port', String(port), '--database', database], shared);
    procs.push(server);
    const url = await eventually(() => /serving (http:\/\/\S+)/.exec(server.output())?.[1], 20_000).catch(() => {
      throw new Error(`runledger serve did not start:\n${server.output()}`);
    });
    const worker = cli(['worker', '--database', database], { ...shared, RUNLEDGER_HTTP_ALLOW: '127.0.0.1' });
    procs.push(worker);
    await eventually(() => /worker \d+: stored workflows/.test(worker.output()), 20_000).catch(() => {
      throw new Error(`runledger worker did not start:\n${worker.output()}`);
    });
    const service = await renderService();
    servers.push(service.server);
    const saved = await api(url, 'POST', '/workflows', awaitRender(service.url));
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    const started = await api(url, 'POST', `/workflows/${saved.body.id}/execute`, { trigger_data: {} });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const record = () => api(url, 'GET', `/workflows/${saved.body.id}/executions/${started.body.execution_id}`);
    const ended = () =>
      eventually(
        async () =>
          (await record()).body.status.match(/^(success|failed|cancelled)$/) ? (await record()).body : undefined,
        30_000,
      );
    return { url, worker, service, executionId: started.body.execution_id as string, ended };
  }

  it('the worker hands out an absolute URL under RUNLEDGER_PUBLIC_URL, and a POST to it completes the execution', async () => {
    const { url, worker, service, executionId, ended } = await deployment((port) => `http://127.0.0.1:${port}/`);
    await eventually(() => service.registrations.length === 1, 30_000).catch(() => {
      throw new Error(`no registration:\n${worker.output()}`);
    });
    const handed = service.registrations[0]!.callback_url;
    expect(handed).toMatch(
      new RegExp(`^${url.replace('localhost', '127.0.0.1')}/callbacks/${executionId}\\.await_render\\.[A-Za-z0-9_-]+$`),
    );
    const answer = await fetch(handed, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ artifact_id: 'art-7' }),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({
      execution_id: executionId,
      step_id: 'await_render',
      status: 'completed',
    });
    const done = await ended();
    expect(done.status, JSON.stringify(done)).toBe('success');
    expect(done.steps.at(-1).output).toEqual({ artifact: 'art-7' });
  });

  it('without RUNLEDGER_PUBLIC_URL the worker fails the step naming it, and hands the service nothing', async () => {
    const { service, ended } = await deployment(() => undefined);
    const done = await ended();
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(
      /wait_for_callback step await_render needs a URL other machines can call.*set RUNLEDGER_PUBLIC_URL/,
    );
    expect(done.steps[0]).toMatchObject({
      step_id: 'await_render',
      status: 'failed',
      error: expect.stringContaining('RUNLEDGER_PUBLIC_URL'),
    });
    expect(service.registrations).toEqual([]);
  });
});
