import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineAgent } from '../agents/agent.js';
import { sessions } from '../agents/service.js';
import { createEngine } from '../engine.js';
import { RUN_EVENT } from '../runtime/events.js';
import { runStream } from '../runtime/pass/history.js';
import { backends } from '../testing/backends.js';
import { eventually } from '../testing/engine.js';
import { storedWorkflows } from '../app/workflows.js';
import { doctor } from './checks.js';

const check = async (database: string, publicUrl?: string) => {
  const report = await doctor({
    database,
    dataDir: mkdtempSync(join(tmpdir(), 'rl-doctor-')),
    sampleMs: 50,
    ...(publicUrl !== undefined ? { publicUrl } : {}),
  });
  return report.checks.find((c) => c.name === 'public url');
};

describe.each(backends)('runledger doctor on the public URL, on $name', (backend) => {
  it('says nothing needs one on a database with no callback step and no HTTP agent, and gives the value when set', async () => {
    const database = await backend.create();
    const engine = await createEngine({ database, workers: false });
    await storedWorkflows(engine, { secretKey: randomBytes(32) }).definitions.create({
      name: 'plain',
      steps: [{ id: 'hi', type: 'log', config: { message: 'hi' } }],
    });
    await engine.close();
    expect(await check(database)).toEqual({
      name: 'public url',
      status: 'ok',
      detail: expect.stringMatching(/^RUNLEDGER_PUBLIC_URL unset; nothing stored hands out a URL/),
    });
    expect(await check(database, 'https://lb.example/runledger/')).toEqual({
      name: 'public url',
      status: 'ok',
      detail: expect.stringMatching(/^RUNLEDGER_PUBLIC_URL=https:\/\/lb\.example\/runledger: /),
    });
    const bad = await doctor({
      database,
      dataDir: mkdtempSync(join(tmpdir(), 'rl-doctor-')),
      sampleMs: 50,
      publicUrl: 'lb.example/runledger',
    });
    expect(bad.checks.find((c) => c.name === 'public url')).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(/^RUNLEDGER_PUBLIC_URL: must be an absolute http\(s\) URL/),
    });
    expect(bad.ok).toBe(false);
  });

  it('warns, naming the setting and the workflow, when a stored workflow waits for a callback (in a parallel branch too)', async () => {
    const database = await backend.create();
    const engine = await createEngine({ database, workers: false });
    const branch = {
      id: 'fan',
      type: 'parallel',
      config: {
        branches: {
          a: [{ id: 'cb', type: 'wait_for_callback', timeout_seconds: 60, config: {} }],
          b: [{ id: 'x', type: 'log', config: { message: 'x' } }],
        },
      },
    };
    const wf = await storedWorkflows(engine, { secretKey: randomBytes(32) }).definitions.create({
      name: 'fans-out',
      steps: [branch],
    });
    await engine.close();
    const found = await check(database);
    expect(found).toMatchObject({
      status: 'warn',
      detail: expect.stringContaining(
        `RUNLEDGER_PUBLIC_URL unset, and the database holds 1 stored workflow(s) with a wait_for_callback step (${wf.id} 'fans-out')`,
      ),
    });
    expect(found!.detail).toMatch(/Set RUNLEDGER_PUBLIC_URL to the address services reach the API at/);
    expect(await check(database, 'https://lb.example')).toMatchObject({
      status: 'ok',
      detail: expect.stringContaining('RUNLEDGER_PUBLIC_URL=https://lb.example'),
    });
  });

  it('warns when the database holds sessions of an HTTP agent', async () => {
    const database = await backend.create();
    const agentServer = createServer((_req, res) => res.writeHead(202).end());
    await new Promise<void>((r) => agentServer.listen(0, '127.0.0.1', r));
    const engine = await createEngine({ database, pollMs: 100 });
    try {
      const url = `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}`;
      const service = sessions(engine, engine.store, {
        agents: [defineAgent('remote', { url, maxWait: '1h' })],
        allow: ['127.0.0.1'],
        reportBaseUrl: 'http://api',
      });
      const { run_id: id } = await service.start({ agent: 'remote', input: {}, key: 'doctor' });
      // the session's run waits for the agent's report: what only an HTTP agent's session does
      await eventually(async () =>
        (await engine.journal.readStream(runStream(id), { limit: 1000 })).some((e) => e.type === RUN_EVENT.waitStarted),
      );
    } finally {
      await engine.close();
      agentServer.close();
    }
    expect(await check(database)).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(
        /^RUNLEDGER_PUBLIC_URL unset, and the database holds sessions of HTTP agents: a worker/,
      ),
    });
  });
});
