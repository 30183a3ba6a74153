import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../agents/agent.js';
import { sessions } from '../agents/service.js';
import { readSession } from '../agents/view.js';
import { isEnded } from '../agents/lifecycle.js';
import { openApp } from '../app/open.js';
import { backends } from '../testing/backends.js';
import { eventually, testEngine } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';

/** A service that records what it was sent and acknowledges it. */
async function recorder() {
  const bodies: { callback_url: string }[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      bodies.push(text ? JSON.parse(text) : null);
      res.writeHead(202, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, close: () => server.close() };
}

const register = (url: string) => ({
  name: 'await-render',
  steps: [
    {
      id: 'await_render',
      type: 'wait_for_callback',
      timeout_seconds: 60,
      config: { request: { method: 'POST', url: `${url}/register`, body: { callback_url: '{{callback.url}}' } } },
    },
  ],
});

describe.each(backends)('the URLs handed to services on $name', (backend) => {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of closers.splice(0).reverse()) await c();
  });

  async function setup() {
    const t = await testEngine(backend, { pollMs: 100 });
    closers.push(t.close);
    const service = await recorder();
    closers.push(service.close);
    const workflows = storedWorkflows(t.engine, { secretKey: randomBytes(32), allow: ['127.0.0.1'] });
    const wf = await workflows.definitions.create(register(service.url));
    const { execution_id } = await workflows.executions.execute(wf.id);
    return { engine: t.engine, workflows, service, wid: wf.id, eid: execution_id };
  }

  it('start a callback URL with the public URL openApp is given, its path prefix kept', async () => {
    const service = await recorder();
    closers.push(service.close);
    const app = await openApp({
      database: await backend.create(),
      secretKey: randomBytes(32),
      publicUrl: 'https://lb.example/runledger/',
      allow: ['127.0.0.1'],
      logger: pino({ level: 'silent' }),
      pollMs: 100,
    });
    closers.push(app.close);
    const wf = await app.workflows.definitions.create(register(service.url));
    const { execution_id: eid } = await app.workflows.executions.execute(wf.id);
    await eventually(() => service.bodies.length === 1);
    const url = new URL(service.bodies[0]!.callback_url);
    expect(url.origin).toBe('https://lb.example');
    expect(url.pathname).toMatch(new RegExp(`^/runledger/callbacks/${eid}\\.await_render\\.[A-Za-z0-9_-]+$`));
    expect(await app.workflows.callbacks.complete(url.pathname.split('/').at(-1)!, { ok: true })).toMatchObject({
      status: 'completed',
    });
    expect(
      await eventually(async () =>
        (await app.workflows.executions.get(wf.id, eid)).status === 'success' ? true : undefined,
      ),
    ).toBe(true);
  });

  it('without a public URL, fail the step for good naming RUNLEDGER_PUBLIC_URL and send nothing', async () => {
    const { workflows, service, wid, eid } = await setup();
    const done = await eventually(async () => {
      const record = await workflows.executions.get(wid, eid);
      return record.status === 'failed' ? record : undefined;
    }, 20_000);
    expect(done.error).toMatch(
      /wait_for_callback step await_render needs a URL other machines can call.*set RUNLEDGER_PUBLIC_URL/,
    );
    expect(done.steps).toEqual([
      expect.objectContaining({
        step_id: 'await_render',
        status: 'failed',
        error: expect.stringContaining('RUNLEDGER_PUBLIC_URL'),
      }),
    ]);
    expect(JSON.stringify(done)).not.toMatch(/"\/callbacks\//);
    expect(service.bodies).toEqual([]);
  });

  it('without a public URL, fail an HTTP agent invocation naming RUNLEDGER_PUBLIC_URL rather than send a relative report_url', async () => {
    const t = await testEngine(backend, { pollMs: 100 });
    closers.push(t.close);
    const agent = await recorder();
    closers.push(agent.close);
    const service = sessions(t.engine, t.engine.store, {
      agents: [defineAgent('remote', { url: `${agent.url}/ack`, maxWait: '10s' })],
      allow: ['127.0.0.1'],
    });
    const { run_id: id } = await service.start({ agent: 'remote', input: {}, key: 'no-public-url' });
    const ended = await eventually(async () => {
      const view = await readSession(t.engine.store, id);
      return view && isEnded(view.status) ? view : undefined;
    }, 20_000);
    expect(ended).toMatchObject({
      status: 'failed',
      error_message: expect.stringMatching(/report_url of session .* needs a URL .*set RUNLEDGER_PUBLIC_URL/),
    });
    expect(agent.bodies).toEqual([]);
  });
});
